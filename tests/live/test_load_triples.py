"""The triple loader: formats, idempotence, bad input, hostile names, through the CLI too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgdb.errors import LoadError
from kgdb.load.triples import load_triples

pytestmark = pytest.mark.live

GOOD = ["Kismet|directed_by|William Dieterle", "Kismet|starred_actors|Marlene Dietrich",
        "Kismet|release_year|1944", "The Story of Louis Pasteur|directed_by|William Dieterle"]


def counts(store) -> tuple[int, int, int]:
    return (store.run("MATCH (n:Entity) RETURN count(n)").value(),
            store.run("MATCH (:Entity)-[r]->(:Entity) RETURN count(r)").value(),
            store.run("MATCH (n:RelationType) RETURN count(n)").value())


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_is_idempotent(store, embedder, tmp_path: Path) -> None:
    path = write(tmp_path, "kb.txt", GOOD)
    report = load_triples(store, embedder, path, progress=False)
    assert report.triples == 4 and report.entities_seen == 5
    assert counts(store) == (5, 4, 3)
    again = load_triples(store, embedder, path, progress=False)
    assert again.entities_written == 0
    assert counts(store) == (5, 4, 3)
    row = store.run("MATCH (:Entity {id: 'Kismet'})-[r:directed_by]->(d) "
                    "RETURN d.name AS d").single()
    assert row == {"d": "William Dieterle"}
    assert store.run("MATCH (t:RelationType {name: 'directed_by'}) RETURN t.text").value() == \
        "directed by"


@pytest.mark.parametrize(("name", "text", "fmt"), [
    ("kb.csv", "subject,predicate,object\nKismet,directed_by,William Dieterle\n"
               '"Paris, Texas",directed_by,Wim Wenders\n', None),
    ("kb.jsonl", '{"subject": "Kismet", "predicate": "directed_by", "object": "William '
                 'Dieterle"}\n["Paris, Texas", "directed_by", "Wim Wenders"]\n', None),
    ("kb.tsv", "Kismet\tdirected_by\tWilliam Dieterle\nParis, Texas\tdirected_by\tWim Wenders\n",
     "tsv"),
])
def test_formats(store, embedder, tmp_path: Path, name: str, text: str, fmt: str | None) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    load_triples(store, embedder, path, fmt=fmt, progress=False)
    assert counts(store) == (4, 2, 1)
    assert store.run("MATCH (n:Entity {id: 'Paris, Texas'}) RETURN count(n)").value() == 1


def test_bad_line_fails_before_its_batch(store, embedder, tmp_path: Path) -> None:
    lines = [*GOOD[:2], "Kismet|release_year", *GOOD[2:]]
    path = write(tmp_path, "bad.txt", lines)
    first_batch = write(tmp_path, "ok.txt", GOOD[:2])
    load_triples(store, embedder, first_batch, progress=False)
    before = counts(store)
    with pytest.raises(LoadError) as info:
        load_triples(store, embedder, path, batch_size=2, progress=False)
    message = str(info.value)
    assert message.startswith(f"{path}:3: expected 3 fields separated by '|', found 2")
    assert "nothing from lines 3-4 was written" in message
    assert "run the same command again" in message
    assert counts(store) == before  # the batch with the bad line wrote nothing


def test_skip_mode_loads_good_lines_and_writes_rejects(store, embedder, tmp_path: Path) -> None:
    lines = [*GOOD, "|directed_by|Nobody", "a|b", "x|has`tick|y"]
    path = write(tmp_path, "mixed.txt", lines)
    report = load_triples(store, embedder, path, on_error="skip", progress=False)
    rejects = Path(report.rejects_file or "").read_text().splitlines()
    assert "empty subject" in rejects[0]
    if store.dialect.BACKTICK_IN_IDENTIFIERS:  # Neo4j quotes a backtick in a type (``)
        assert report.triples == 5 and report.rejected == 2
        assert [r.split("\t")[0] for r in rejects] == ["5", "6"]
        assert counts(store) == (7, 5, 4)
    else:  # FalkorDB cannot: that line is rejected, not mangled
        assert report.triples == 4 and report.rejected == 3
        assert [r.split("\t")[0] for r in rejects] == ["5", "6", "7"]
        assert "backtick" in rejects[2]
        assert counts(store) == (5, 4, 3)


def test_hostile_predicates_become_types_safely(store, embedder, tmp_path: Path) -> None:
    path = write(tmp_path, "hostile.txt", [
        "a|x]->() DETACH DELETE n //|b", "a|with space|b", "a|ünïcode|b"])
    load_triples(store, embedder, path, progress=False)
    types = {r["t"] for r in store.run("MATCH ()-[r]->() RETURN DISTINCT type(r) AS t").records()}
    assert types == {"x]->() DETACH DELETE n //", "with space", "ünïcode"}
    assert counts(store) == (2, 3, 3)


def test_invalid_utf8_is_reported_with_its_line(store, embedder, tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"a|r|b\nCaf\xe9|r|b\n")
    with pytest.raises(LoadError, match=r"latin1.txt:2: not valid UTF-8"):
        load_triples(store, embedder, path, progress=False)


def test_cli_reports_one_line_and_exit_1(cli_store, tmp_path: Path) -> None:
    from kgdb.cli import cli, main

    path = write(tmp_path, "bad.txt", ["a|b|c", "only two|fields"])
    runner = CliRunner()
    with pytest.raises(SystemExit) as exit_info:
        main(["load", "triples", str(path), "--no-progress"])
    assert exit_info.value.code == 1
    ok = runner.invoke(cli, ["load", "triples", str(path),
                             "--on-error", "skip", "--json", "--no-progress"])
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.output)
    assert data["triples"] == 1 and data["rejected"] == 1


def test_cli_main_prints_no_traceback(cli_store, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from kgdb.cli import main

    path = write(tmp_path, "bad.txt", ["only two|fields"])
    with pytest.raises(SystemExit) as exit_info:
        main(["load", "triples", str(path), "--no-progress"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"kgdb: error: {path}:1: expected 3 fields")
    assert "Traceback" not in capsys.readouterr().err
