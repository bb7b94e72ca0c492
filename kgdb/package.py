"""kgdb as an installed package: its distribution name and version, the example programs it
ships (read through the package's data, so they work from any folder), and the one-line note
for a clone whose folder shadows the package."""

from __future__ import annotations

import functools
import shutil
from importlib import metadata, resources
from pathlib import Path

from kgdb.errors import KgdbError

DISTRIBUTION = "kgdb-retrieval"
"""The name on PyPI (``kgdb`` there is an unrelated project); the import name stays ``kgdb``."""

EXAMPLE_SUFFIXES = (".lf", ".rules")


@functools.cache  # read once: the service names it in every request's metadata
def version() -> str:
    """kgdb's version, as the installed distribution records it."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError as exc:
        raise KgdbError(f"{DISTRIBUTION} is not installed (from a clone: pip install -e .)") from exc


def _examples() -> Path:
    return Path(str(resources.files("kgdb").joinpath("data", "examples")))


def example_names() -> list[str]:
    """The bundled example programs: logical forms (``.lf``) and rule sets (``.rules``)."""
    return sorted(p.name for p in _examples().iterdir() if p.suffix in EXAMPLE_SUFFIXES)


def example(name: str) -> Path:
    """The path of the bundled example ``name`` (``one_hop_director.lf``,
    ``hypertension.rules``...), wherever kgdb is installed; an unknown name is an error
    listing the known ones."""
    names = example_names()
    if name not in names:
        raise KgdbError(f"no bundled example {name!r}: the examples are {', '.join(names)}")
    return _examples() / name


def copy_examples(directory: Path) -> list[Path]:
    """Copies every bundled example into ``directory`` (created if missing); a file already
    there is kept, not overwritten. Returns the files written."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KgdbError(f"{directory}: cannot create the folder ({exc.strerror})") from exc
    written = []
    for name in example_names():
        target = directory / name
        if target.exists():
            continue
        try:
            shutil.copyfile(_examples() / name, target)
        except OSError as exc:
            raise KgdbError(f"{target}: cannot write the example ({exc.strerror})") from exc
        written.append(target)
    return written


def shadowing_note(package_dir: Path | None = None) -> str | None:
    """One line when kgdb runs from a clone whose folder is named ``kgdb``: a script in the
    folder above it imports that folder (a namespace package without kgdb's code) instead of
    the package, and fails with ``module 'kgdb' has no attribute 'connect'``."""
    package = (package_dir or Path(__file__).resolve().parent).resolve()
    clone = package.parent
    if clone.name != "kgdb" or not (clone / "pyproject.toml").is_file():
        return None
    return (f"kgdb: note: this clone's folder is named kgdb ({clone}): a script in {clone.parent} "
            f"imports that folder instead of the package (\"module 'kgdb' has no attribute "
            f"'connect'\"); rename the folder, e.g. to {DISTRIBUTION}")
