"""Golden table of the beam-search expansion statement (kgdb/cypher/beam.py), both dialects
side by side in tests/unit/goldens/beam.json, every Neo4j text linted; the statements run
against a brute-force beam on both engines in tests/live/test_beam.py.

Regenerate with ``KGDB_UPDATE_GOLDENS=1 pytest tests/unit/test_beam_goldens.py`` and review
the diff."""

from __future__ import annotations

import pytest

from kgdb.cypher import beam
from kgdb.cypher.beam import BeamError
from kgdb.dialects import get_dialect
from kgdb.retrieve.beam import beam_paths, complete_subgraph
from tests.support.goldens import Case, assert_neo4j_lints_clean, validate_all

VECTOR = [0.6, 0.8]
ROOTS = [{"key": 0, "at": "kismet", "path": ["kismet"]},
         {"key": 1, "at": "juarez", "path": ["juarez"]}]
DEEPER = [{"key": 0, "at": "dieterle", "path": ["kismet", "dieterle"]}]

CASES = [
    Case("expand_frontier[both]", {"frontier": ROOTS, "width": 3, "direction": "both"},
         lambda d: beam.expand_frontier(d, VECTOR, ROOTS, 3)),
    Case("expand_frontier[out]", {"frontier": DEEPER, "width": 1, "direction": "out"},
         lambda d: beam.expand_frontier(d, VECTOR, DEEPER, 1, "out")),
    Case("expand_frontier[width 0]", {"frontier": ROOTS, "width": 0},
         lambda d: beam.expand_frontier(d, VECTOR, ROOTS, 0)),
    Case("expand_frontier[direction in]", {"frontier": ROOTS, "width": 3, "direction": "in"},
         lambda d: beam.expand_frontier(d, VECTOR, ROOTS, 3, "in")),
]


def test_beam_goldens() -> None:
    table = validate_all("beam", CASES)
    for name, message in (("expand_frontier[width 0]",
                           "beam width must be an integer of at least 1, not 0"),
                          ("expand_frontier[direction in]",
                           "unknown beam direction 'in'; choose one of both, out")):
        case = next(c for c in table["cases"] if c["case"] == name)
        for dialect in ("falkordb", "neo4j"):
            assert case[dialect] == {"error": "BeamError", "message": message}
    assert_neo4j_lints_clean(table)


def test_no_builder_leaves_a_value_in_the_text() -> None:
    for dialect in ("neo4j", "falkordb"):
        d = get_dialect(dialect)
        for frontier in (ROOTS, DEEPER):
            text = beam.expand_frontier(d, VECTOR, frontier, 2).text
            for value in ("kismet", "juarez", "dieterle", "0.6", "0.8"):
                assert value not in text, (dialect, value)


class NoStore:
    """Options are checked before anything is sent."""

    def run(self, *_: object) -> None:
        raise AssertionError("nothing should run")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"width": 0}, r"^beam width must be an integer of at least 1, not 0$"),
    ({"width": 2.5}, r"^beam width must be an integer of at least 1, not 2\.5$"),
    ({"max_length": 0}, r"^max_length must be an integer of at least 1, not 0$"),
    ({"direction": "outt"}, r"^unknown beam direction 'outt' \(did you mean 'out'\?\); "
                            r"choose one of both, out$"),
])
def test_bad_options_raise_one_line(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(BeamError, match=message):
        beam_paths(NoStore(), VECTOR, ["kismet"], **kwargs)  # type: ignore[arg-type]
    with pytest.raises(BeamError, match=message):
        complete_subgraph(NoStore(), VECTOR, [], **kwargs)  # type: ignore[arg-type]


def test_bad_top_k_vector_and_sources() -> None:
    with pytest.raises(BeamError, match=r"^sources must be a list of entity ids, not the "
                                        r"string 'kismet'$"):
        beam_paths(NoStore(), VECTOR, "kismet")  # type: ignore[arg-type]
    with pytest.raises(BeamError, match=r"^top_k must be an integer of at least 0, not -1$"):
        complete_subgraph(NoStore(), VECTOR, [], top_k=-1)  # type: ignore[arg-type]
    for vector in ([], [float("nan"), 1.0]):
        with pytest.raises(BeamError, match="question vector must be a non-empty list"):
            beam_paths(NoStore(), vector, ["kismet"])  # type: ignore[arg-type]
