"""The three ways kgdb gets a Neo4j (Maven Central, docker/compose.yaml, testcontainers) use
the same Neo4j version and the same plugins. Docker does not run on kgdb's machines, so this
is what keeps the Docker paths from drifting."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests import conftest

ROOT = Path(__file__).resolve().parents[2]


def pom_property(name: str) -> str:
    text = (ROOT / "kgdb" / "data" / "neo4j" / "pom.xml").read_text()
    found = re.search(rf"<{re.escape(name)}>([^<]+)</{re.escape(name)}>", text)
    assert found, name
    return found.group(1)


def compose_value(key: str) -> str:
    text = (ROOT / "docker" / "compose.yaml").read_text()
    found = re.search(rf"^\s+{re.escape(key)}:\s*(.+?)\s*$", text, re.MULTILINE)
    assert found, key
    return found.group(1).strip("'\"")


def test_one_neo4j_version_everywhere() -> None:
    version = pom_property("neo4j.version")
    assert pom_property("apoc.version") == version  # APOC Core is released per Neo4j patch
    assert compose_value("image") == f"neo4j:{version}-community"
    assert f"neo4j:{version}-community" == conftest.NEO4J_IMAGE


def test_the_same_plugins_everywhere() -> None:
    plugins = ["apoc", "apoc-extended", "graph-data-science"]
    assert json.loads(compose_value("NEO4J_PLUGINS")) == plugins
    assert json.loads(conftest.NEO4J_PLUGINS) == plugins
    pom = (ROOT / "kgdb" / "data" / "neo4j" / "pom.xml").read_text()
    for artifact in ("apoc-core", "apoc-extended", "opengds-extension"):
        assert f"<artifactId>{artifact}</artifactId>" in pom, artifact


def test_kgdb_plugin_matches_neo4j_kgdb_and_docker() -> None:
    """neo4j-plugin/ builds against the Neo4j kgdb runs, carries kgdb's version (what
    ``kgdb procedures status`` compares), and every server allows ``kgdb.*``."""
    import kgdb

    plugin = (ROOT / "neo4j-plugin" / "pom.xml").read_text()
    assert f"<neo4j.version>{pom_property('neo4j.version')}</neo4j.version>" in plugin
    version = re.search(r"</artifactId>\s*(?:<!--.*?-->\s*)?<version>([^<]+)</version>",
                        plugin, re.DOTALL)
    assert version and version.group(1) == kgdb.__version__
    compose = (ROOT / "docker" / "compose.yaml").read_text()
    assert f"neo4j-plugin/target/kgdb-neo4j-plugin-{kgdb.__version__}.jar:/plugins/" in compose
    assert "kgdb.*" in compose_value("NEO4J_dbms_security_procedures_allowlist")
    conf = (ROOT / "kgdb" / "data" / "neo4j" / "neo4j.conf").read_text()
    assert re.search(r"^dbms\.security\.procedures\.allowlist=.*kgdb\.\*", conf, re.MULTILINE)
    assert '"apoc.*,gds.*,custom.*,kgdb.*"' in (ROOT / "tests" / "conftest.py").read_text()
