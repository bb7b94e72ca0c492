"""The solvers: every way kgdb answers a question, found by name in :mod:`kgdb.retrieve.registry`
(the contract in :mod:`kgdb.retrieve.solver`, the one evidence shape in
:mod:`kgdb.retrieve.evidence`). SimGRAG (:mod:`~kgdb.retrieve.pattern`,
:mod:`~kgdb.retrieve.simgrag`), KAG's logical forms (:mod:`~kgdb.retrieve.logical_form`),
KG-Retriever (:mod:`~kgdb.retrieve.hig`), KG-CQR (:mod:`~kgdb.retrieve.cqr`,
:mod:`~kgdb.retrieve.beam`), chunk search and the mutual index (:mod:`~kgdb.retrieve.chunks`);
their evaluations (:mod:`~kgdb.retrieve.documents`, :mod:`~kgdb.retrieve.metaqa`)."""
