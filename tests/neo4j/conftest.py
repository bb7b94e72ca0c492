"""The Neo4j suite uses the session's Neo4j from tests/conftest.py (``neo4j_settings``,
``neo4j_store``): KGDB_NEO4J_URI, else a Neo4j started from Maven Central, else
testcontainers, else a skip with the reason."""
