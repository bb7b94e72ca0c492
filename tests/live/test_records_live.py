"""Loading records into the embedded FalkorDB: batched, idempotent, nothing half-written."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgdb.errors import LoadError
from kgdb.load.records import load_records, read_spec

pytestmark = pytest.mark.live

SPEC = """
[file]
path = "bp.csv"
header = false
delimiter = ";"
missing = ["?"]
[entity]
label = "Patient"
id_prefix = "t/"
[[columns]]
column = 2
property = "SystolicPressure"
type = "float"
[[columns]]
column = 1
property = "Age"
type = "int"
"""


def test_load_is_batched_idempotent_and_converges(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "bp.csv"
    data.write_text("".join(f"{40 + i % 30};{110 + i}\n" for i in range(25)))
    spec = read_spec(_spec(tmp_path))
    batches: list[int] = []
    assert load_records(store, spec, batch_size=10, on_batch=batches.append) == 25
    assert batches == [10, 10, 5]
    assert load_records(store, spec, batch_size=7) == 25
    assert store.run("MATCH (p:Patient) RETURN count(p)").value() == 25
    row = store.run("MATCH (p:Patient {id: 't/3'}) RETURN p.SystolicPressure AS s, p.Age AS a, "
                    "p.name AS n").single()
    assert row == {"s": 112.0, "a": 42, "n": "t/3"}
    assert any(i.label == "Patient" and i.properties == ("id",) for i in store.indexes())

    # A value that became missing is removed on reload.
    data.write_text("".join(f"{40 + i % 30};{'?' if i == 2 else 110 + i}\n" for i in range(25)))
    load_records(store, spec)
    assert store.run("MATCH (p:Patient {id: 't/3'}) RETURN p.SystolicPressure").value() is None
    assert store.run("MATCH (p:Patient) RETURN count(p)").value() == 25


def test_bad_row_writes_nothing(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "bp.csv"
    data.write_text("50;120\n60;130\n70;high\n")
    with pytest.raises(LoadError, match=r"bp.csv:3: column 2 \(SystolicPressure\): 'high'"):
        load_records(store, read_spec(_spec(tmp_path)))
    assert store.run("MATCH (n) RETURN count(n)").value() == 0


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(SPEC)
    return path
