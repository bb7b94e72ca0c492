"""The kgdb plugin for Neo4j (``neo4j-plugin/`` in the repository): a jar of ``kgdb.*`` functions
and procedures, built with Maven from its sources and cached by their hash.

``kgdb neo4j start`` puts it into the Maven-started server's plugins directory; ``kgdb neo4j
plugin`` builds it and prints the jar's path for a DBA to copy into their own server's
``plugins/`` (Neo4j 5.26+, no APOC needed). The jar is built once per source state into
kgdb's cache (``~/.cache/kgdb/neo4j/plugin/``); Maven's own downloads stay in ``~/.m2``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
from pathlib import Path

import kgdb
from kgdb.engine.process import file_lock
from kgdb.errors import EngineConnectionError

log = logging.getLogger("kgdb")

BUILD_TIMEOUT_S = 1800.0
KEEP_BUILDS = 8
"""Plugin builds kept in the cache (64 KB each), the current one included."""
ARTIFACT = "kgdb-neo4j-plugin"
VERSION = kgdb.__version__
"""The plugin carries kgdb's version (neo4j-plugin/pom.xml); kgdb uses a plugin of another
version only to report it (``kgdb procedures status``), never as a back end."""


def source_dir() -> Path:
    """``neo4j-plugin/`` beside the ``kgdb`` package (a source checkout)."""
    return Path(kgdb.__file__).resolve().parent.parent / "neo4j-plugin"


def _source_hash(src: Path) -> str:
    digest = hashlib.sha256()
    files = [src / "pom.xml", *sorted((src / "src" / "main").rglob("*"))]
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(src)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def plugin_jar(*, build: bool = True) -> Path:
    """The plugin jar for the current sources, built with Maven when not cached yet (tests are
    left to ``make plugin``; the build skips them). Raises EngineConnectionError with the cause
    when it cannot be built."""
    from kgdb.config import cache_dir

    src = source_dir()
    if not (src / "pom.xml").is_file():
        raise EngineConnectionError(
            f"the kgdb Neo4j plugin's sources are not at {src}: it is built from a source "
            "checkout of kgdb (neo4j-plugin/)")
    jar = cache_dir() / "neo4j" / "plugin" / f"{ARTIFACT}-{VERSION}-{_source_hash(src)}.jar"
    if jar.is_file() or not build:
        return jar
    jar.parent.mkdir(parents=True, exist_ok=True)
    # one build at a time (several servers may start at once): the others wait, then find it
    with file_lock(jar.parent / "build.lock", BUILD_TIMEOUT_S, "the kgdb Neo4j plugin build"):
        if not jar.is_file():
            _build(src, jar)
    return jar


def _build(src: Path, jar: Path) -> None:
    mvn = shutil.which("mvn")
    if not mvn:
        raise EngineConnectionError("the kgdb Neo4j plugin: `mvn` is not on PATH: install "
                                    "Apache Maven 3.8+ and a Java 17 JDK")
    log.info("building the kgdb Neo4j plugin with Maven (%s)", src)
    try:
        done = subprocess.run([mvn, "-B", "-q", "-Dstyle.color=never", "-DskipTests",
                               "-f", str(src / "pom.xml"), "package"],
                              capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise EngineConnectionError(f"the kgdb Neo4j plugin: Maven did not build it within "
                                    f"{BUILD_TIMEOUT_S:.0f} s") from exc
    built = src / "target" / f"{ARTIFACT}-{VERSION}.jar"
    if done.returncode != 0 or not built.is_file():
        output = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
        errors = [ln.removeprefix("[ERROR]").strip() for ln in output.splitlines()
                  if ln.startswith("[ERROR]") and ln.strip() != "[ERROR]"]
        cause = errors[0][:300] if errors else f"mvn exit {done.returncode}, no {built.name}"
        raise EngineConnectionError(f"the kgdb Neo4j plugin did not build: {cause}")
    tmp = jar.with_suffix(".tmp")
    shutil.copyfile(built, tmp)
    os.replace(tmp, jar)
    prune_builds(jar)


def prune_builds(current: Path, keep: int = KEEP_BUILDS) -> None:
    """Delete cached builds of other sources beyond the newest ``keep`` (``current``
    included). Other checkouts or versions of kgdb may still use theirs: the cache stays
    bounded without taking a jar from under a checkout that built it a moment ago."""
    builds = sorted((p for p in current.parent.glob(f"{ARTIFACT}-*.jar") if p != current),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in builds[keep - 1:]:
        old.unlink(missing_ok=True)
