"""The standing adversarial suite: the hostile corpus through every surface, on the `store`
fixture (so on every engine the fixture is parametrised over).

Every case ends in one of two ways: stored verbatim (modulo the README's documented
normalisation), or rejected cleanly (a KgdbError naming the place, the graph unchanged).
Anything else is a failure; the figures are printed at the end of the run.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgdb.dsl.rules_check import load_rules
from kgdb.errors import KgdbError
from kgdb.load.records import load_records, read_spec
from kgdb.load.triples import load_triples
from kgdb.schema import apply_schema, parse_schema
from kgdb.solve.rules_apply import apply_rules
from tests.support.hostile import CORPUS, TALLY, contract_problem, field_expectation, normalised

pytestmark = pytest.mark.live

CASES = list(CORPUS.items())


@pytest.fixture(scope="session", autouse=True)
def hostile_figures(request: pytest.FixtureRequest) -> Iterator[None]:
    """Print the suite's figures once, at the end of the run."""
    yield
    if getattr(TALLY, "printed", False) or not TALLY.surfaces:
        return
    TALLY.printed = True  # type: ignore[attr-defined]
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        reporter.write_line("hostile suite (cases tried, correct: stored verbatim or rejected "
                            "cleanly as documented, failures):")
        for line in TALLY.lines():
            reporter.write_line(line)


def graph_counts(store) -> tuple[int, int]:
    return (store.run("MATCH (n) RETURN count(n)").value(),
            store.run("MATCH ()-[r]->() RETURN count(r)").value())


def stored_ids(store, label: str) -> list[str]:
    return [r["id"] for r in store.run(f"MATCH (n:{label}) RETURN n.id AS id").records()]


# ---------------------------------------------------------------------- triples
def _triples_file(tmp_path: Path, fmt: str) -> tuple[Path, dict[int, tuple[str, str | None]]]:
    """One line per usable case: {line: (case, expected subject or None for a rejection)}."""
    lines: list[bytes] = []
    expect: dict[int, tuple[str, str | None]] = {}
    for i, (case, value) in enumerate(CASES):
        obj = f"hostile object {i}"
        if fmt == "jsonl":
            line = json.dumps({"subject": value, "predicate": "hostile_rel", "object": obj})
            expected = field_expectation(value)
        elif "\n" in value:
            continue  # a line break ends a line in tsv/csv: JSONL carries these cases
        elif fmt == "csv":
            out = io.StringIO()
            # "\r\n" as terminator makes the writer quote fields holding a CR
            csv.writer(out, lineterminator="\r\n").writerow([value, "hostile_rel", obj])
            line = out.getvalue().removesuffix("\r\n")
            expected = field_expectation(value)
        else:
            line = f"{value}|hostile_rel|{obj}"
            expected = None if "|" in value else field_expectation(value)
        lines.append(line.encode("utf-8", "surrogatepass"))  # a lone surrogate: invalid UTF-8
        expect[len(lines)] = (case, expected)
    path = tmp_path / f"hostile.{ 'txt' if fmt == 'tsv' else fmt}"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, expect


@pytest.mark.parametrize("fmt", ["tsv", "csv", "jsonl"])
def test_triples_store_verbatim_or_reject(store, embedder, tmp_path: Path, fmt: str) -> None:
    path, expect = _triples_file(tmp_path, fmt)
    rejects = tmp_path / "rejects.txt"
    report = load_triples(store, embedder, path, sep="|" if fmt == "tsv" else None,
                          on_error="skip", rejects_path=rejects, progress=False)
    rejected_lines = {int(line.split("\t", 1)[0])
                      for line in rejects.read_text(encoding="utf-8").split("\n") if line} \
        if rejects.exists() else set()
    accepted = {line: exp for line, (_, exp) in expect.items() if exp is not None}
    wanted_rejected = {line for line, (_, exp) in expect.items() if exp is None}
    # the stored subjects are exactly the expected ones, each once
    rows = store.run("MATCH (e:Entity)-[:hostile_rel]->(o:Entity) "
                     "RETURN e.id AS id, e.name AS name, o.id AS o").records()
    stored: dict[str, str] = {r["o"]: r["id"] for r in rows}
    failures = []
    for line, (case, exp) in expect.items():
        obj = f"hostile object {CASES.index((case, CORPUS[case]))}"
        if exp is None:
            if line not in rejected_lines or obj in stored:
                failures.append(f"{case}: expected a clean rejection")
        elif stored.get(obj) != exp:
            failures.append(f"{case}: stored {stored.get(obj)!r:.60} instead of {exp!r:.60}")
    TALLY.add(f"triples {fmt} [{store.dialect.NAME}]", verbatim=len(accepted) - sum(
        1 for f in failures if "instead" in f), rejected=len(wanted_rejected) - sum(
        1 for f in failures if "rejection" in f), failures=len(failures))
    assert not failures, failures
    assert report.rejected == len(wanted_rejected)
    assert rejected_lines == wanted_rejected
    assert all(r["id"] == r["name"] for r in rows)
    # loading again changes nothing (idempotent for every accepted id)
    before = graph_counts(store)
    load_triples(store, embedder, path, sep="|" if fmt == "tsv" else None, on_error="skip",
                 rejects_path=rejects, progress=False)
    assert graph_counts(store) == before
    assert before[1] == len(accepted)


def test_triples_rejection_names_the_line_and_writes_nothing(store, embedder,
                                                              tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_text("Kismet|directed_by|William Dieterle\n", encoding="utf-8")
    load_triples(store, embedder, good, progress=False)
    before = graph_counts(store)
    tried = 0
    for case, value in CASES:
        if "\n" in value or field_expectation(value) is not None or "|" in value:
            continue
        path = tmp_path / "bad.txt"
        path.write_bytes(("Kismet|starred_actors|Someone\n" + f"{value}|directed_by|X\n")
                         .encode("utf-8", "surrogatepass"))
        with pytest.raises(KgdbError) as info:
            load_triples(store, embedder, path, progress=False)
        assert f"{path}:2:" in str(info.value), case
        assert graph_counts(store) == before, case
        tried += 1
    TALLY.add(f"triples --on-error fail [{store.dialect.NAME}]", rejected=tried)
    assert tried >= 12


# ---------------------------------------------------------------------- records
SPEC = """
[file]
header = true
delimiter = ","
[entity]
label = "HostileRecord"
id_column = "Id"
[[columns]]
column = {column}
property = "Note"
type = "str"
"""


def _csv_bytes(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)  # CRLF; CR inside fields quoted
    return out.getvalue().encode("utf-8", "surrogatepass")


def test_records_ids_and_values_verbatim_or_reject(store, tmp_path: Path) -> None:
    spec_path = tmp_path / "hostile.toml"
    spec_path.write_text(SPEC.format(column='"Note"'), encoding="utf-8")
    spec = read_spec(spec_path)
    verbatim = rejected = 0
    failures = []
    ids: set[str] = set()
    for i, (case, value) in enumerate(CASES):
        data = tmp_path / f"records{i}.csv"
        data.write_bytes(_csv_bytes([["Id", "Note"], [value, value]]))
        expected_id = field_expectation(value)
        expected_note = None if contract_problem(value, key=False) else \
            normalised(value.strip(" \t")) or None
        before = graph_counts(store)
        try:
            for _ in range(3):  # three loads, one node (finding 2)
                load_records(store, spec, data)
        except KgdbError as exc:
            if expected_id is not None and expected_note is not None:
                failures.append(f"{case}: rejected ({exc})")
            elif f"{data}:" not in str(exc) or graph_counts(store) != before:
                failures.append(f"{case}: rejection without place, or the graph changed")
            else:
                rejected += 1
            continue
        if expected_id is None and not value.strip() and graph_counts(store) == before:
            rejected += 1  # a blank row is skipped, as documented
            continue
        rows = store.run("MATCH (n:HostileRecord {id: $id}) RETURN n.Note AS note",
                         {"id": expected_id}).records()
        if expected_id is None or len(rows) != 1 or rows[0]["note"] != expected_note:
            failures.append(f"{case}: stored {rows!r:.80}, expected id {expected_id!r:.40}")
        else:
            verbatim += 1
            ids.add(expected_id)
    total = store.run("MATCH (n:HostileRecord) RETURN count(n)").value()
    TALLY.add(f"records ids and values [{store.dialect.NAME}]", verbatim=verbatim, rejected=rejected,
              failures=len(failures))
    assert not failures, failures
    assert total == len(ids)  # no duplicates, however often each file was loaded


def test_records_hostile_header_names(store, tmp_path: Path) -> None:
    verbatim = rejected = 0
    failures = []
    for i, (case, value) in enumerate(CASES):
        spec_path = tmp_path / f"h{i}.toml"
        spec_path.write_text(SPEC.format(column=json.dumps(value)), encoding="utf-8")
        data = tmp_path / f"h{i}.csv"
        data.write_bytes(_csv_bytes([["Id", value], [f"row{i}", "note"]]))
        try:
            load_records(store, read_spec(spec_path), data)
        except KgdbError as exc:
            if not re.match(rf"^{re.escape(str(spec_path))}: |^{re.escape(str(data))}:\d+: ",
                            str(exc)):
                failures.append(f"{case}: {exc}")
            else:
                rejected += 1
            continue
        note = store.run("MATCH (n:HostileRecord {id: $id}) RETURN n.Note AS n",
                         {"id": f"row{i}"}).value()
        if note != "note" or contract_problem(value):
            failures.append(f"{case}: accepted a header the contract refuses, or lost the value")
        else:
            verbatim += 1
    TALLY.add(f"records CSV headers and specs [{store.dialect.NAME}]", verbatim=verbatim,
              rejected=rejected,
              failures=len(failures))
    assert not failures, failures


# ---------------------------------------------------------------------- schemas
_COMMENT = re.compile(r"(?:^|(?<=\s))#")


def _concept_expectation(value: str) -> str | None:
    cut = _COMMENT.split(value, maxsplit=1)[0].strip()
    if not cut or ":" in cut or "/" in cut or contract_problem("Hostile/" + cut):
        return None
    return cut


def test_schema_concept_names(store, embedder) -> None:
    accepted: dict[str, str] = {}
    rejected = 0
    failures = []
    for case, value in CASES:
        if "\n" in value or "\r" in value or not value.strip():
            continue  # a concept is one line; an empty line is no concept
        text = f"Hostile: ConceptType\n    concepts:\n        {value}\n"
        expected = _concept_expectation(value)
        try:
            parsed = parse_schema(text, source="hostile.schema")
        except KgdbError as exc:
            if expected is not None or not str(exc).startswith("hostile.schema:3: "):
                failures.append(f"{case}: {exc}")
            else:
                rejected += 1
            continue
        names = [c.name for t in parsed.types for c in t.concepts]
        if names != [expected]:
            failures.append(f"{case}: parsed {names!r:.60}, expected {expected!r:.60}")
        elif expected is not None:
            accepted[case] = expected
    lines = "".join(f"        {name}\n" for name in dict.fromkeys(accepted.values()))
    apply_schema(store, parse_schema(f"Hostile: ConceptType\n    concepts:\n{lines}"), embedder)
    apply_schema(store, parse_schema(f"Hostile: ConceptType\n    concepts:\n{lines}"), embedder)
    ids = stored_ids(store, "Concept")
    for case, name in accepted.items():
        if ids.count(f"Hostile/{name}") != 1:
            failures.append(f"{case}: concept Hostile/{name!r:.40} stored {ids.count(name)} times")
    TALLY.add(f"schema concept names [{store.dialect.NAME}]", verbatim=len(accepted), rejected=rejected,
              failures=len(failures))
    assert not failures, failures
    assert accepted["hash"] == "C# Programming"  # finding 4: '#' inside a name is kept


# ---------------------------------------------------------------------- rules
def _rule_literal(name: str) -> str:
    """A rule string: backslash, quote, LF and TAB escaped (a CR has no escape: refused)."""
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") \
        .replace("\t", "\\t") + "'"


def test_rules_concept_names(store) -> None:
    accepted: dict[str, str] = {}
    rejected = 0
    failures = []
    for case, value in CASES:
        text = f"Define (Hostile/{_rule_literal(value)}) {{\n  Score >= 1\n}}\n"
        try:
            rules = load_rules(text, "hostile.rules")
        except KgdbError as exc:
            if not contract_problem("Hostile/" + value) and value.strip() and "\r" not in value:
                failures.append(f"{case}: rejected: {str(exc)[:100]}")
            elif not str(exc).startswith("hostile.rules:"):
                failures.append(f"{case}: rejection without place: {str(exc)[:100]}")
            else:
                rejected += 1
            continue
        if contract_problem("Hostile/" + value):
            failures.append(f"{case}: accepted a name the contract refuses")
        elif rules.rules[0].concept.id != f"Hostile/{value}":
            failures.append(f"{case}: concept id {rules.rules[0].concept.id!r:.60} altered")
        else:
            accepted[case] = value
    store.run("CREATE (:HostilePatient {id: 'p1', Score: 5})", write=True)
    program = "".join(f"Define (Hostile/{_rule_literal(v)}) {{\n  Score >= 1\n}}\n"
                      for v in dict.fromkeys(accepted.values()))
    rules = load_rules(program, "hostile.rules")
    for _ in range(2):  # applying twice changes nothing
        apply_rules(store, rules, label="HostilePatient", ruleset="hostile")
    concept_ids = stored_ids(store, "Concept")
    belongs = store.run("MATCH (:HostilePatient)-[r:belongTo]->(c:Concept) "
                        "RETURN c.id AS id").records()
    for case, value in accepted.items():
        if concept_ids.count(f"Hostile/{value}") != 1 or \
                [b["id"] for b in belongs].count(f"Hostile/{value}") != 1:
            failures.append(f"{case}: concept or conclusion missing or repeated")
    TALLY.add(f"rules concept names [{store.dialect.NAME}]", verbatim=len(accepted), rejected=rejected,
              failures=len(failures))
    assert not failures, failures


# ---------------------------------------------------------------------- logical forms
def test_logical_form_names(store, embedder) -> None:
    from kgdb.dialects import get_dialect
    from kgdb.dsl.logical_form import parse_plan
    from kgdb.solve.lf_compile import compile_plan
    from kgdb.solve.lf_run import Executor

    path = Path(store.__class__.__name__ + ".kb")  # only for the loader's messages
    del path
    verbatim = rejected = 0
    failures = []
    loaded: list[str] = []
    for case, value in CASES:
        if "`" in value or "\n" in value or "\r" in value:
            continue  # a back-quoted name spans one line and holds no backtick
        text = f"Retrieval(s=s1:Movie[`{value}`], p=p1:directed_by, o=o1)\nOutput(o1)\n"
        try:
            plan = parse_plan(text, "hostile.lf")
            compiled = compile_plan(plan, store.dialect)
        except KgdbError as exc:
            if not str(exc).startswith("hostile.lf:1:"):
                failures.append(f"{case}: rejection without place: {str(exc)[:80]}")
            elif value.strip() and not contract_problem(value):
                failures.append(f"{case}: rejected a name the contract accepts: {exc}")
            else:
                rejected += 1
            continue
        params = json.dumps([op.query.statement.params for op in compiled.ops
                             if hasattr(op, "query")], ensure_ascii=False)
        # names are trimmed of surrounding spaces, as the loaders trim ids
        if json.dumps(value.strip(), ensure_ascii=False)[1:-1] not in params:
            failures.append(f"{case}: the name does not reach the statement verbatim")
            continue
        verbatim += 1
        if len(loaded) < 6 and value.strip() == value and value:
            loaded.append(value)
    # a few of them against the graph: exactly the loaded fact comes back
    for i, name in enumerate(loaded):
        store.run("MERGE (m:Entity {id: $m, name: $m}) MERGE (d:Entity {id: $d, name: $d}) "
                  "MERGE (m)-[:directed_by]->(d)", {"m": name, "d": f"director {i}"}, write=True)
    for i, name in enumerate(loaded):
        plan = parse_plan(f"Retrieval(s=s1:Movie[`{name}`], p=p1:directed_by, o=o1)\n"
                          "Output(o1)\n", "hostile.lf")
        result = Executor(store, linker=None, embedder=embedder, llm=None).run(plan)
        if f"director {i}" not in json.dumps(result.to_json(), ensure_ascii=False):
            failures.append(f"{name!r}: the plan did not find its fact")
    TALLY.add(f"logical-form names [{store.dialect.NAME}]", verbatim=verbatim, rejected=rejected,
              failures=len(failures))
    assert not failures, failures
    assert get_dialect(store.dialect.NAME)


# ---------------------------------------------------------------------- parameters
def test_parameters_round_trip_or_reject(store) -> None:
    verbatim = rejected = 0
    failures = []
    before = graph_counts(store)
    for case, value in CASES:
        for statement, write in (("RETURN $v AS v", False),
                                 ("CREATE (n:HostileParam {v: $v}) RETURN n.v AS v", True)):
            try:
                got = store.run(statement, {"v": value}, write=write).value()
            except KgdbError as exc:
                if contract_problem(value, key=False) and "parameter $v" in str(exc):
                    rejected += 1
                else:
                    failures.append(f"{case}: {str(exc)[:100]}")
                continue
            if got != value or contract_problem(value, key=False):
                failures.append(f"{case}: came back as {got!r:.60}")
            else:
                verbatim += 1
    # hostile parameter names: refused before the engine, on every engine
    for name in ["ы", "CYPHER", "cypher", "1a", "a-b", "a b", "", "x" * 65, "a`b", "a$"]:
        try:
            store.run("RETURN 1 AS one", {name: 1})
            failures.append(f"parameter name {name!r} accepted")
        except KgdbError:
            rejected += 1
    created = sum(1 for _, v in CASES if not contract_problem(v, key=False))
    TALLY.add(f"parameters (values and names) [{store.dialect.NAME}]", verbatim=verbatim, rejected=rejected,
              failures=len(failures))
    assert not failures, failures
    assert graph_counts(store) == (before[0] + created, before[1])
