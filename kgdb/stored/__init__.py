"""What ingestion writes into the graph and retrieval reads back: the shapes both sides agree
on, below both, so that retrieval never imports ingestion (tests/unit/test_import_graph.py).

* :mod:`~kgdb.stored.ppr_options`: the retrieval graph's build options, which
  :mod:`kgdb.documents.ppr_graph` stores with the graph and :mod:`kgdb.retrieve.ppr` reads.
* :mod:`~kgdb.stored.triples`: which relation types carry triple texts under a vector index
  (:mod:`kgdb.documents.triple_index` writes them; ``triple-context`` and the service's fact
  search read them).
"""
