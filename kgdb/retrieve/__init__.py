"""The solvers: every way kgdb answers a question, found by name in :mod:`kgdb.retrieve.registry`
(the contract in :mod:`kgdb.retrieve.solver`, the one evidence shape in
:mod:`kgdb.retrieve.evidence`). Each solver's module carries its name: ``pattern``
(SimGRAG: :mod:`~kgdb.retrieve.pattern`, :mod:`~kgdb.retrieve.pattern_search`,
:mod:`~kgdb.retrieve.pattern_llm`), ``logical-form`` (KAG's logical forms:
:mod:`~kgdb.retrieve.logical_form`), ``document-graph`` (KG-Retriever:
:mod:`~kgdb.retrieve.document_graph`), ``triple-context`` (KG-CQR:
:mod:`~kgdb.retrieve.triple_context`, :mod:`~kgdb.retrieve.beam`), ``vector``, ``entities``
(the mutual index), ``hybrid``, ``keyword`` and ``ppr`` (HippoRAG 2 without an LLM); their
evaluations (:mod:`~kgdb.retrieve.documents`, :mod:`~kgdb.retrieve.metaqa`)."""
