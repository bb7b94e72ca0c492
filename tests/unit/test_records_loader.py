"""Reading tabular records with a loader spec: typed values, missing markers, FILE:LINE errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgdb.dialects import get_dialect
from kgdb.errors import LoadError
from kgdb.load.records import merge_records, read_records, read_spec

ROOT = Path(__file__).resolve().parents[2]


def write_spec(tmp_path: Path, body: str) -> Path:
    spec = tmp_path / "spec.toml"
    spec.write_text(body)
    return spec


HEADER_SPEC = """
[file]
path = "d.csv"
missing = ["?"]
[entity]
label = "Patient"
id_prefix = "x/"
[[columns]]
column = "bp"
property = "DiastolicPressure"
type = "float"
missing = ["0"]
[[columns]]
column = "n"
property = "Pregnancies"
type = "int"
[[columns]]
column = "ok"
property = "Flag"
type = "bool"
"""


def test_header_columns_types_and_missing_markers(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("n,bp,ok\n0,72,1\n3,0,no\n2,?,true\n\n5,88.5,0\n")
    spec = read_spec(write_spec(tmp_path, HEADER_SPEC))
    records = read_records(spec, spec.path)  # type: ignore[arg-type]
    assert [(r.id, r.values) for r in records] == [
        ("x/1", (72.0, 0, True)), ("x/2", (None, 3, False)), ("x/3", (None, 2, True)),
        ("x/4", (88.5, 5, False))]


@pytest.mark.parametrize("content,line,fragment", [
    ("n,bp,ok\n1,72,1\n2,seventy,1\n", 3, "column bp (DiastolicPressure): 'seventy' is not a float"),
    ("n,bp,ok\n1.5,72,1\n", 2, "column n (Pregnancies): '1.5' is not an int"),
    ("n,bp,ok\n1,72,maybe\n", 2, "column ok (Flag): 'maybe' is not a boolean"),
    ("n,bp,ok\n1,72\n", 2, "expected at least 3 fields, found 2"),
    ("n,bp,ok\n1,nan,1\n", 2, "column bp (DiastolicPressure): 'nan' is not a finite number"),
])
def test_bad_rows_name_file_and_line(tmp_path: Path, content: str, line: int, fragment: str) -> None:
    data = tmp_path / "d.csv"
    data.write_text(content)
    spec = read_spec(write_spec(tmp_path, HEADER_SPEC))
    with pytest.raises(LoadError) as info:
        read_records(spec, data)
    assert str(info.value) == f"{data}:{line}: {fragment}"


def test_unknown_header_column_and_duplicate_ids(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("n,BP,ok\n1,72,1\n")
    spec = read_spec(write_spec(tmp_path, HEADER_SPEC))
    with pytest.raises(LoadError, match=r"d.csv:1: no column 'bp' in the header \(did you mean 'BP'"):
        read_records(spec, data)
    data.write_text("id,bp\nA,1\nA,2\n")
    spec = read_spec(write_spec(tmp_path, '[entity]\nlabel = "P"\nid_column = "id"\n'
                                          '[[columns]]\ncolumn = "bp"\nproperty = "bp"\ntype = "int"\n'))
    with pytest.raises(LoadError, match=r"d.csv:3: id 'A' repeats the row at line 2"):
        read_records(spec, data)


@pytest.mark.parametrize("body,fragment", [
    ("[entity]\n[[columns]]\ncolumn = 1\nproperty = 'a'\n", "needs label"),
    ("[entity]\nlabel = 'P'\n", "at least one [[columns]]"),
    ("[entity]\nlabel = 'P'\n[[columns]]\ncolumn = 1\nproperty = 'a'\ntype = 'flaot'\n",
     "did you mean 'float'"),
    ("[file]\nheader = false\n[entity]\nlabel = 'P'\n[[columns]]\ncolumn = 'a'\nproperty = 'a'\n",
     "is a name but the file has no header"),
    ("[entity]\nlabel = 'P'\n[[columns]]\ncolumn = 0\nproperty = 'a'\n", "start at 1"),
    ("[entity\n", "invalid TOML"),
    ("[entity]\nlabel = 'P'\n[[columns]]\ncolumn = 1\nproperty = 'id'\n", "given twice (or is 'id')"),
])
def test_spec_errors(tmp_path: Path, body: str, fragment: str) -> None:
    with pytest.raises(LoadError) as info:
        read_spec(write_spec(tmp_path, body))
    assert fragment in str(info.value) and str(info.value).startswith(str(tmp_path / "spec.toml"))


def test_shipped_specs_read_and_quote_identifiers() -> None:
    for name, label, props in [("cleveland", "Patient", "SystolicPressure"),
                               ("pima", "Patient", "DiastolicPressure")]:
        spec = read_spec(ROOT / "loaders" / "specs" / f"{name}.toml")
        assert spec.label == label and props in [c.property for c in spec.columns]
        text = merge_records(get_dialect("falkordb"), spec).text
        assert f"MERGE (n:`{label}` {{id: row.id}})" in text and f"n.`{props}` = row.v[" in text
