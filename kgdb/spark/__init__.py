"""``kgdb spark load-documents``: the document pipeline as a PySpark job that writes into Neo4j
through the Neo4j Connector for Apache Spark (the optional extra ``kgdb[spark]``).

See :mod:`kgdb.spark.job` and docs/spark.md.
"""

from __future__ import annotations

from kgdb.spark.job import CONNECTOR, SparkLoadReport, load_documents_spark, spark_session

__all__ = ["CONNECTOR", "SparkLoadReport", "load_documents_spark", "spark_session"]
