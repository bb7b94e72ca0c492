"""Every Cypher statement kgdb runs is built in this package (by feature) or in
:mod:`kgdb.dialects` (what differs by engine). Builders return :class:`~kgdb.statement.Statement`.
"""
