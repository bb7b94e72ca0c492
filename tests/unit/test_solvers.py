"""The solver contract without a database: the registry, options declared once and the three
schemas generated from them (command line, OpenAPI, MCP) agreeing, option mapping, evidence
shape, LLM reply cleaning, percentiles, and the solvers' statements recorded by a fake store."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from kgdb.cli import cli
from kgdb.cli.solvers import owners, shared_fields
from kgdb.config import Settings
from kgdb.embed.base import Embedder
from kgdb.llm.replies import clean_reply, fenced_bodies, strip_reasoning
from kgdb.measure import percentile, summary
from kgdb.retrieve.evidence import Evidence, Fact, Group, Passage, documents_of
from kgdb.retrieve.hybrid import fuse_scores, rrf
from kgdb.retrieve.registry import ALIASES, SOLVERS, parse_options, solver_named
from kgdb.retrieve.solver import AskError
from kgdb.serve.operations import ServeConfig
from kgdb.serve.tokens import TokenFile
from kgdb.statement import Statement

ROOT = Path(__file__).resolve().parents[2]


def test_every_solver_is_registered_under_its_own_name() -> None:
    assert list(SOLVERS) == ["pattern", "logical-form", "document-graph", "triple-context",
                             "vector", "keyword", "entities", "hybrid", "ppr"]
    for name, solver in SOLVERS.items():
        assert solver.name == name and solver.summary
        assert solver.options.model_fields["solver"].default == name
        assert parse_options({"solver": name}).solver == name
    assert {ALIASES[a] for a in ("simgrag", "lf", "hig", "cqr")} == {
        "pattern", "logical-form", "document-graph", "triple-context"}
    assert parse_options({"solver": "hig"}).solver == "document-graph"
    assert parse_options(None).solver == "pattern"
    with pytest.raises(AskError, match="did you mean 'vector'"):
        solver_named("vectr")


def test_a_shared_option_is_declared_once() -> None:
    """Options of the same name in several solvers come from one declaration (a mixin), so
    they cannot drift apart."""
    for name, info in shared_fields().items():
        for solver in owners(name):
            other = SOLVERS[solver].options.model_fields[name]
            assert (other.default, other.description, other.metadata, other.annotation) == (
                info.default, info.description, info.metadata, info.annotation), (name, solver)


def test_no_option_default_or_range_is_written_twice_in_the_code() -> None:
    """The flags of ask/retrieve are generated: no click option of the command line repeats a
    solver option's name, and no solver-dispatch by string is left."""
    text = (ROOT / "kgdb" / "cli" / "retrieve.py").read_text(encoding="utf-8")
    # eval's --k lists cut-offs; kgdb pattern --examples also takes a JSON file
    for name in set(shared_fields()) - {"k", "examples"}:
        flag = "--" + name.replace("_", "-")
        declared = re.findall(rf'click\.option\(\s*"{re.escape(flag)}"', text)
        assert declared == [], f"{flag} is declared by hand"
    everything = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "kgdb").rglob("*.py"))
    assert "solver ==" not in everything and "mode.startswith" not in everything


def _cli_options() -> dict[str, dict[str, Any]]:
    command = cli.commands["retrieve"]
    out = {}
    for param in command.params:
        if param.name in ("question", "solver", "pattern", "show_cypher", "as_json",
                          "output_format"):
            continue
        ptype = param.type
        out[param.name] = {"min": getattr(ptype, "min", None), "max": getattr(ptype, "max", None),
                           "choices": list(getattr(ptype, "choices", []) or []) or None}
    return out


def _schema_options(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for variant in schema["oneOf"]:
        model = defs[variant["$ref"].rsplit("/", 1)[1]]
        for name, prop in model["properties"].items():
            if name in ("solver", "pattern"):
                continue
            out[name] = {"min": prop.get("minimum"), "max": prop.get("maximum"),
                         "choices": prop.get("enum"), "default": prop.get("default")}
    return out


def test_cli_openapi_and_mcp_schemas_agree(tmp_path: Path) -> None:
    from kgdb.serve.app import create_app
    from kgdb.serve.mcp import build_server

    (tmp_path / "tokens.json").write_text('{"tokens": []}', encoding="utf-8")
    (tmp_path / "tokens.json").chmod(0o600)
    config = ServeConfig(Settings.from_env(), TokenFile.load(tmp_path / "tokens.json"))
    openapi = create_app(config).openapi()
    defs = openapi["components"]["schemas"]
    request = defs["AskRequest"]["properties"]["options"]
    from_openapi = _schema_options(request, defs)

    server = build_server(config)
    tools = {t.name: t for t in asyncio.run(server.list_tools())}
    tool = tools["retrieve"]
    mcp_schema = getattr(tool, "input_schema", None) or tool.inputSchema
    options = mcp_schema["properties"]["options"]
    union = next(o for o in options.get("anyOf", [options]) if "oneOf" in o)
    from_mcp = _schema_options(union, mcp_schema["$defs"])
    assert from_mcp == from_openapi

    from_cli = _cli_options()
    assert set(from_cli) == set(from_openapi) == set(shared_fields())
    for name, cli_option in from_cli.items():
        schema = from_openapi[name]
        assert (cli_option["min"], cli_option["max"]) == (schema["min"], schema["max"]), name
        assert cli_option["choices"] == schema["choices"], name
        assert schema["default"] == shared_fields()[name].default, name


def test_flags_map_to_the_chosen_solvers_options() -> None:
    from kgdb.cli.solvers import options_from_cli

    parsed = options_from_cli("hig", (), {"seeds": 5, "strategy": "attentive", "k": None})
    assert parsed.model_dump() == {"solver": "document-graph", "passages": 10,
                                   "strategy": "attentive", "seeds": 5, "facts": 30,
                                   "threshold": 0.1, "fact_boost": 0.03, "dense": 100}
    pattern = options_from_cli("pattern", ("Kismet|directed_by|UNKNOWN 1",), {})
    assert pattern.pattern == [("Kismet", "directed_by", "UNKNOWN 1")]  # type: ignore[attr-defined]
    result = CliRunner().invoke(cli, ["retrieve", "q", "--solver", "vector", "--beam-width", "2"])
    assert result.exit_code == 2 and "--beam-width is an option of triple-context" in result.output
    result = CliRunner().invoke(cli, ["retrieve", "q", "--pattern", "a|b"])
    assert result.exit_code == 2 and "'a|b' is not 'head|relation|tail'" in result.output
    with pytest.raises(ValidationError):
        parse_options({"solver": "vector", "passages": float("nan")})


def test_ask_help_says_what_needs_an_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(cli, ["ask", "--help"])
    assert result.exit_code == 0
    assert "with an LLM" in result.output and "kgdb retrieve" in result.output
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(cli, ["ask", "q", "--solver", "vector"])
    assert result.exit_code == 1
    assert result.output.strip().endswith("no LLM is configured (OPENAI_BASE_URL, "
                                          "OPENAI_API_KEY) and the answer is written by an LLM; "
                                          "kgdb retrieve gives the evidence without one")
    result = CliRunner().invoke(cli, ["retrieve", "q", "--solver", "logical-form"])
    assert result.exit_code == 1 and "plans with an LLM" in result.output


def test_evidence_rows_groups_and_documents() -> None:
    evidence = Evidence("q", "pattern", score_kind="gsd",
                        facts=[Fact("Kismet", "directed_by", "William Dieterle", "k", "w",
                                    score=0.25, group=1),
                               Fact("A", "rel", "B")],
                        groups=[Group(1, "subgraph", 0.25, (("x", "k", "Kismet"),))],
                        passages=[Passage("d1#0001#000", "d1", "text", 0.9),
                                  Passage("d2#0001#000", "d2", "t2", 0.8),
                                  Passage("d1#0002#000", "d1", "t3", 0.7)])
    rows = [r.to_json() for r in evidence.rows()]
    assert rows[0] == {"rank": 1, "head": "Kismet", "relation": "directed_by",
                       "tail": "William Dieterle", "score": 0.25, "source": "subgraph 1"}
    assert rows[1]["source"] == "graph" and rows[2]["relation"] == "passage"
    assert [d.id for d in documents_of(evidence.passages)] == ["d1", "d2"]
    assert evidence.group_facts() == [[evidence.facts[0]]]
    payload = evidence.to_json()
    assert payload["groups"] == [{"rank": 1, "kind": "subgraph", "score": 0.25,
                                  "nodes": {"x": {"id": "k", "name": "Kismet"}}}]
    assert evidence.knowledge()[1] == "- A rel B"
    assert any("GSD 0.2500" in line for line in evidence.render())


def test_reciprocal_rank_fusion() -> None:
    fused = rrf([["a", "b", "c"], ["c", "a"]], k=60)
    assert [d.id for d in fused] == ["a", "c", "b"]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 62)


def test_score_fusion_adds_weighted_entity_evidence_to_the_dense_score() -> None:
    dense = {"a": 0.80, "b": 0.70, "c": 0.60}
    evidence = {"c": 1.0, "d": 0.5}
    fused = fuse_scores(dense, evidence, 0.25)
    # c: 0.60 + 0.25; d has no chunk among the dense ones: the lowest dense score, 0.60
    assert [(d.id, round(d.score or 0.0, 6)) for d in fused] == [
        ("c", 0.85), ("a", 0.8), ("d", 0.725), ("b", 0.7)]
    # weight 0 is plain vector search (d ties c at the floor and follows it by id)
    assert [d.id for d in fuse_scores(dense, evidence, 0.0)] == ["a", "b", "c", "d"]
    # a small weight only breaks near ties: b (0.70 + 0.05) passes a (0.72), c does not
    assert [d.id for d in fuse_scores({"a": 0.72, "b": 0.70, "c": 0.5}, {"b": 1.0, "c": 1.0},
                                      0.05)] == ["b", "a", "c"]
    # evidence alone (no dense scores): ranked by evidence, ties by id
    assert [d.id for d in fuse_scores({}, {"x": 0.5, "y": 1.0, "w": 0.5}, 0.2)] == [
        "y", "w", "x"]


@pytest.mark.parametrize(("reply", "expected"), [
    ("```json\n[0, 1]\n```", "[0, 1]"),
    ("<think>the answer is [3]</think>\n[0]", "[0]"),
    ("<think>cut off while thinking", ""),
    ("Sure:\n```\nANSWER: x\n```\nthanks", "ANSWER: x"),
    ("  plain  ", "plain"),
])
def test_reply_cleaning(reply: str, expected: str) -> None:
    assert clean_reply(reply) == expected


def test_reasoning_is_not_read_as_an_answer() -> None:
    assert strip_reasoning("<THINKING>True?</thinking>False") == "False"
    assert fenced_bodies("<think>```\nx\n```</think>```\ny\n```") == ["y\n"]
    from kgdb.retrieve.pattern_llm import parse_verdict

    assert parse_verdict("<think>maybe True</think> The answer is False") is False


def test_one_percentile_definition() -> None:
    values = [float(v) for v in range(1, 11)]
    assert percentile(values, 50) == 5.0 and percentile(values, 90) == 9.0
    assert percentile(values, 100) == 10.0 and percentile([7.0], 99) == 7.0
    assert summary(values)["p99"] == 10.0 and summary([]) == {}
    with pytest.raises(ValueError):
        percentile(values, 0)


class _Rows:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    def records(self) -> list[dict[str, Any]]:
        return self._rows


class FakeStore:
    """Records statements and answers them from a script (by the statement's first line)."""

    address = "fake://graph"

    def __init__(self, answers: dict[str, list[dict[str, Any]]]) -> None:
        from kgdb.dialects.falkordb import FalkorDBDialect

        self.dialect = FalkorDBDialect()
        self.answers = answers
        self.ran: list[Statement] = []

    def view(self, observer: Any = None, **_: Any) -> FakeStore:
        return self

    def run(self, statement: Statement) -> _Rows:
        self.ran.append(statement)
        for key, rows in self.answers.items():
            if key in statement.text:
                return _Rows(rows)
        return _Rows([])


class FixedEmbedder(Embedder):
    model_id = "fixed"

    @property
    def dimension(self) -> int:
        return 3

    def embed(self, texts: Any) -> np.ndarray:
        return np.tile(np.array([1.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))


def test_vector_solver_scores_passages_by_cosine_and_ranks_documents() -> None:
    store = FakeStore({"queryNodes('Chunk'": [
        {"chunk": "a#1", "document": "a", "text": "A", "distance": 0.0},
        {"chunk": "b#1", "document": "b", "text": "B", "distance": 1.0},
        {"chunk": "a#2", "document": "a", "text": "A2", "distance": 1.2}]})
    evidence = solver_named("vector").retrieve(store, FixedEmbedder(), "q",  # type: ignore[arg-type]
                                               parse_options({"solver": "vector",
                                                              "passages": 3}))
    assert [p.score for p in evidence.passages] == pytest.approx([1.0, 0.5, 0.28])
    assert [d.id for d in evidence.documents] == ["a", "b"]
    assert store.ran[0].params["k"] == 3 and len(store.ran) == 1
    recall = solver_named("vector").for_recall(parse_options({"solver": "vector"}), 10)
    assert recall.passages == 100  # type: ignore[attr-defined]


def test_document_graph_ranks_seeds_then_neighbours_by_weighted_cosine() -> None:
    rows = [{"seed": "s", "seed_sim": 0.9, "m1": "n1", "w1": 0.5, "sim1": 0.8, "m2": None,
             "w2": None, "sim2": None},
            {"seed": "s", "seed_sim": 0.9, "m1": "n2", "w1": 0.9, "sim1": 0.7, "m2": None,
             "w2": None, "sim2": None},
            {"seed": "s", "seed_sim": 0.9, "m1": "n3", "w1": 0.1, "sim1": 0.5, "m2": None,
             "w2": None, "sim2": None}]
    store = FakeStore({"queryNodes('Document'": rows})
    options = parse_options({"solver": "document-graph", "strategy": "attentive", "facts": 0,
                             "passages": 0, "dense": 0})
    evidence = solver_named("document-graph").retrieve(store, FixedEmbedder(), "q",  # type: ignore[arg-type]
                                                       options)
    # n2: 0.9 * 0.7 = 0.63 before n1: 0.5 * 0.8 = 0.4; n3 (0.05) is below lambda = 0.1
    assert [d.id for d in evidence.documents] == ["s", "n2", "n1"]
    assert len(store.ran) == 1  # facts = 0: the document level alone
