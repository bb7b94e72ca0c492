"""The web page of ``kgdb serve`` in a real browser: Debian's Chromium, driven by Playwright
(never a downloaded browser). One read-only service (writes disabled) on a real port over two
graphs of the embedded FalkorDB, one browser for the module.

Covered: signing in with a token kept in the tab only; the solver form generated from the
options models; a SimGRAG pattern question without an LLM drawn as a graph (nodes, edges,
pattern nodes marked); expanding a node by click and by keyboard; a hub's expansion capped
and saying so; passages with entity mentions highlighted; copying a Cypher statement; the rules
panel; an answer streamed from the scripted LLM server; hostile names shown as text with no
script run; a token of graph B that cannot list or draw graph A; a Content-Security-Policy
that the page keeps (no violation reported). A screenshot of each state is saved under
``artifacts/browser/`` (ignored by git)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgdb.config import Settings
from kgdb.load.triples import load_triples
from kgdb.serve.app import PAGE_CSP, ServeConfig, create_app
from kgdb.serve.tokens import TokenFile
from tests.conftest import _falkordb_store, engine_env
from tests.support.hostile import MARKUP
from tests.support.live_server import LiveServer
from tests.support.openai_server import ScriptedOpenAI

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "dsl" / "examples" / "hypertension.rules"
CHROMIUM = os.environ.get("KGDB_CHROMIUM", "/usr/bin/chromium")
SHOTS = Path(os.environ.get("KGDB_ARTIFACTS", ROOT / "artifacts")) / "browser"
HUB_SIZE = 40
EXPAND_LIMIT = 25  # app.js's EXPAND_LIMIT
FILMS = [("Kismet", "directed_by", "William Dieterle"),
         ("Kismet", "starred_actors", "Marlene Dietrich"),
         ("Kismet", "release_year", "1944"),
         ("Blonde Venus", "starred_actors", "Marlene Dietrich"),
         ("Paprika", "directed_by", "Satoshi Kon")]
HOSTILE = [("Kismet", "alias", name) for name in MARKUP.values()]
HUB = [("Hub City", "links_to", f"Spoke {i:02d}") for i in range(HUB_SIZE)]
SECRET = [("Zorblax Saga", "directed_by", "Quentin Quuxman")]
DOCUMENT = ("Kismet is a 1944 film directed by William Dieterle. Marlene Dietrich starred in "
            "Kismet as the dancer Jamilla.\n")


def _load(store: Any, embedder: Any, triples: list[tuple[str, str, str]], path: Path) -> None:
    path.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in triples), encoding="utf-8")
    load_triples(store, embedder, path, sep="\t", progress=False)


@pytest.fixture(scope="module")
def site(embedded_home: Path, embedder: Any, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[dict[str, Any]]:
    """Graph A (films, hostile names, a hub, a document), graph B (another tenant's film),
    the scripted LLM, the service on a real port and a token per graph."""
    from kgdb.documents.pipeline import DocumentOptions, load_documents

    tmp = tmp_path_factory.mktemp("web")
    stores_a = _falkordb_store(embedded_home)
    stores_b = _falkordb_store(embedded_home)
    a, b = next(stores_a), next(stores_b)
    with pytest.MonkeyPatch.context() as mp, ScriptedOpenAI() as llm_server:
        for name, value in engine_env(a).items():
            mp.setenv(name, value)
        _load(a, embedder, FILMS + HOSTILE + HUB, tmp / "a.tsv")
        _load(b, embedder, SECRET, tmp / "b.tsv")
        (tmp / "kismet.txt").write_text(DOCUMENT, encoding="utf-8")
        (tmp / "paprika.txt").write_text("Paprika is a film by Satoshi Kon.\n", encoding="utf-8")
        load_documents(a, embedder, [tmp / "kismet.txt", tmp / "paprika.txt"],
                       options=DocumentOptions(extract="gazetteer"), progress=False)
        from kgdb.documents.ppr_graph import build_graph

        build_graph(a, embedder)  # --solver ppr's retrieval graph
        tokens = TokenFile(tmp / "tokens.json", [])
        secrets = {"a": tokens.add("reader-a", ("read",), (a.graph_name,)),
                   "b": tokens.add("reader-b", ("read",), (b.graph_name,)),
                   "all": tokens.add("every-graph", ("read",), ("*",))}
        from kgdb.cli.rules import read_rules
        from kgdb.llm import ChatClient, LlmSettings

        config = ServeConfig(Settings.from_env(), TokenFile.load(tmp / "tokens.json"),
                             allow_writes=False, timeout_s=20, max_rows=200,
                             rulesets={"hypertension": read_rules(RULES)})
        llm = ChatClient(LlmSettings(base_url=llm_server.base_url, api_key="test-key",
                                     model="scripted-model", http_retries=0))
        with LiveServer(create_app(config, embedder=embedder, llm=llm)) as server:
            yield {"url": server.url, "tokens": secrets, "a": a.graph_name,
                   "b": b.graph_name, "llm": llm_server, "config": config,
                   "embedder": embedder}
    for stores in (stores_a, stores_b):
        next(stores, None)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"the browser tests need Chromium at {CHROMIUM}: apt-get install -y "
                    "chromium (make test does it as root), or set KGDB_CHROMIUM", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM,
                                              args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, site: dict[str, Any]) -> Iterator[Any]:
    """A fresh tab (its own storage) that records console messages and page errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site["url"])
    tab = context.new_page()
    tab.messages = []  # type: ignore[attr-defined]
    tab.on("console", lambda m: tab.messages.append(f"{m.type}: {m.text}"))  # type: ignore[attr-defined]
    tab.on("pageerror", lambda e: tab.messages.append(f"pageerror: {e}"))  # type: ignore[attr-defined]
    yield tab
    violations = [m for m in tab.messages if "Content Security Policy" in m  # type: ignore[attr-defined]
                  or m.startswith("pageerror")]
    context.close()
    assert violations == []


def shot(page: Any, name: str, *, top: int | None = None) -> None:
    """A screenshot of the whole page (or of its ``top`` pixels) under ``artifacts/browser``."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    clip = {"x": 0, "y": 0, "width": 1280, "height": top} if top else None
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True, clip=clip)


def sign_in(page: Any, site: dict[str, Any], who: str = "a") -> Any:
    reply = page.goto(site["url"] + "/")
    page.fill("#token", site["tokens"][who])
    page.press("#token", "Enter")  # keyboard only
    page.wait_for_selector("#app:not([hidden])")
    page.wait_for_function("() => document.querySelectorAll('#solver option').length > 0")
    return reply


def ask_pattern(page: Any, question: str, pattern: str, k: int = 1) -> None:
    page.select_option("#solver", "pattern")
    page.fill("#question", question)
    page.fill("#opt-pattern", pattern)
    page.fill("#opt-k", str(k))
    page.check("input[name=mode][value=retrieve]")
    page.click("#ask-button")
    page.wait_for_function("() => /^(Evidence in|\\d{3}:)/.test(document.getElementById('status')"
                           ".textContent)")


def drawn(page: Any) -> tuple[list[str], list[tuple[str, str, str]]]:
    names = page.eval_on_selector_all(
        "#graph-svg g.node", "gs => gs.map(g => g.getAttribute('data-id'))")
    edges = page.eval_on_selector_all(
        "#graph-svg g.edge", "gs => gs.map(g => [g.dataset.source, g.dataset.relation, "
                             "g.dataset.target])")
    return names, [tuple(e) for e in edges]


def node_names(page: Any) -> set[str]:
    return set(page.eval_on_selector_all(
        "#graph-svg g.node text", "ts => ts.map(t => t.textContent)"))


def test_sign_in_ask_a_pattern_expand_and_copy(page: Any, site: dict[str, Any]) -> None:
    reply = sign_in(page, site)
    assert reply.headers["content-security-policy"] == PAGE_CSP
    assert "'unsafe-inline'" not in PAGE_CSP and "script-src 'self'" in PAGE_CSP
    # the token stays in this tab: sessionStorage, no cookie, no localStorage
    assert page.evaluate("sessionStorage.getItem('kgdb.token')") == site["tokens"]["a"]
    assert page.evaluate("localStorage.length") == 0 and page.evaluate("document.cookie") == ""
    assert page.eval_on_selector_all("#graph option", "os => os.map(o => o.value)") == [
        site["a"]]
    # the form comes from the solvers' option models
    solvers = page.eval_on_selector_all("#solver option", "os => os.map(o => o.value)")
    assert {"pattern", "vector", "document-graph", "ppr"} <= set(solvers)
    assert page.get_attribute("#opt-k", "max") == "1000"
    assert page.eval_on_selector_all("#opt-engine option", "os => os.map(o => o.value)") == [
        "cypher", "optimized", "native"]
    shot(page, "1-signed-in")

    ask_pattern(page, "Who directed Kismet?", "Kismet|directed_by|UNKNOWN director 1")
    # hover an entity of the evidence: its properties, loaded once, never its vector
    page.hover('#graph-svg g.node[data-id="William Dieterle"]')
    page.wait_for_function("() => /labels/.test(document.getElementById('tooltip').textContent)")
    tip = page.inner_text("#tooltip")
    assert "Entity" in tip and "embedding" not in tip and "UNKNOWN director 1" in tip
    names, edges = drawn(page)
    assert sorted(names) == ["Kismet", "William Dieterle"]
    # a pattern node's variable is shown unless it only repeats the name
    assert node_names(page) == {"Kismet", "William Dieterle (UNKNOWN director 1)"}
    assert edges == [("Kismet", "directed_by", "William Dieterle")]
    assert page.locator("#graph-svg circle.ring").count() == 2  # both pattern nodes marked
    groups = page.inner_text("#groups-table tbody")
    assert "subgraph" in groups and "UNKNOWN director 1 = William Dieterle" in groups
    assert page.inner_text("#facts-table tbody").split("\t")[1:4] == [
        "Kismet", "directed_by", "William Dieterle"]
    assert re.search(r"embed [\d.]+ ms", page.inner_text("#timings"))
    shot(page, "2-evidence")

    # click an entity: its neighbours through the read-only endpoint
    page.click('#graph-svg g.node[data-id="Kismet"]')
    page.wait_for_function("() => document.querySelectorAll('#graph-svg g.node').length > 2")
    expanded = node_names(page)
    assert {"Marlene Dietrich", "1944"} <= expanded
    assert MARKUP["script tag"][:39] + "\u2026" in expanded or MARKUP["script tag"] in expanded
    panel = page.inner_text("#node-panel")
    assert "Kismet" in panel and "neighbours" in panel and "embedding" not in panel
    # hover shows properties, never vectors
    page.hover('#graph-svg g.node[data-id="Marlene Dietrich"]')
    tip = page.inner_text("#tooltip")
    assert "Marlene Dietrich" in tip and "Entity" in tip and "embedding" not in tip
    shot(page, "3-expanded")
    # by keyboard: focus Marlene Dietrich and press Enter
    page.focus('#graph-svg g.node[data-id="Marlene Dietrich"]')
    page.keyboard.press("Enter")
    page.wait_for_function("() => [...document.querySelectorAll('#graph-svg g.node text')]"
                           ".some(t => t.textContent === 'Blonde Venus')")

    # copy a Cypher statement
    page.click("#statements button.copy >> nth=0")
    page.wait_for_function("() => document.querySelector('#statements button.copy')"
                           ".textContent === 'Copied'")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == page.inner_text("#statements pre >> nth=0").split("\n// params:")[0]
    assert "MATCH" in copied or "CALL" in copied


def test_hub_expansion_is_capped_and_says_so(page: Any, site: dict[str, Any]) -> None:
    sign_in(page, site)
    ask_pattern(page, "What does Hub City link to?", "Hub City|links_to|UNKNOWN 1")
    # the evidence holds one of the tied spokes (which one is the engine's pick)
    before = {n for n in node_names(page) if n.startswith("Spoke")}
    assert len(before) == 1
    page.click('#graph-svg g.node[data-id="Hub City"]')
    page.wait_for_selector("#node-panel .capped")
    assert f"first {EXPAND_LIMIT} neighbours" in page.inner_text("#node-panel .capped")
    spokes = {n for n in node_names(page) if n.startswith("Spoke")}
    # the capped expansion added its 25 spokes beside the evidence's, which it may include
    assert before <= spokes and len(spokes) - EXPAND_LIMIT in (0, 1)
    shot(page, "4-capped")


def test_passages_highlight_entity_mentions(page: Any, site: dict[str, Any]) -> None:
    sign_in(page, site)
    page.select_option("#solver", "hybrid")
    page.fill("#question", "Who directed Kismet?")
    page.click("#ask-button")
    page.wait_for_function("() => /^(Evidence in|\\d{3}:)/.test(document.getElementById('status')"
                           ".textContent)")
    assert page.inner_text("#status").startswith("Evidence in"), page.inner_text("#status")
    text = page.inner_text("#passages")
    assert "directed by William Dieterle" in text
    page.wait_for_selector("#passages mark")
    marks = set(page.eval_on_selector_all("#passages mark", "ms => ms.map(m => m.textContent)"))
    assert {"Kismet", "William Dieterle", "Marlene Dietrich"} <= marks  # the mutual index's
    shot(page, "5-passages")


def test_rules_panel(page: Any, site: dict[str, Any]) -> None:
    sign_in(page, site)
    page.wait_for_selector("#ruleset option[value=hypertension]", state="attached")
    page.fill("#facts", json.dumps({"SystolicPressure": 160, "DiastolicPressure": 95}))
    page.click("#rules-form button")
    page.wait_for_selector("#conclusions-table:not([hidden]) tbody tr")
    rows = page.inner_text("#conclusions-table tbody")
    assert "Grade 2 Hypertension" in rows and "hypertension:" in rows
    shot(page, "6-rules")


def test_answer_streams_from_the_llm(page: Any, site: dict[str, Any]) -> None:
    answer = "William Dieterle directed Kismet, according to graph one of the evidence."
    site["llm"].push(json.dumps({"divided": ["Kismet was directed by someone"],
                                 "triples": [["Kismet", "directed_by", "UNKNOWN director 1"]]}),
                     {"content": answer, "chunk_delay": 0.15, "prompt_tokens": 80})
    sign_in(page, site)
    page.select_option("#solver", "pattern")
    page.fill("#question", "Who directed Kismet?")
    page.check("input[name=mode][value=ask]")
    page.click("#ask-button")
    # the evidence is drawn while the answer is still being written
    page.wait_for_selector("#graph-svg g.node")
    page.wait_for_function("() => document.getElementById('answer').textContent.length > 0")
    partial = page.inner_text("#answer")
    assert answer.startswith(partial.strip()) and len(partial.strip()) < len(answer)
    shot(page, "7-streaming")
    page.wait_for_function("() => document.getElementById('status').textContent === 'Answered.'")
    assert page.inner_text("#answer") == answer
    assert page.inner_text("#usage").startswith("LLM: 2 requests, 81 tokens in")
    assert "answer" in page.inner_text("#timings")
    shot(page, "8-answered")
    shot(page, "8-answered-top", top=1200)  # docs/web-page.png


def test_hostile_names_are_text_and_no_script_runs(page: Any, site: dict[str, Any]) -> None:
    sign_in(page, site)
    ask_pattern(page, "What is Kismet also called?", "Kismet|alias|UNKNOWN 1", k=len(MARKUP))
    page.wait_for_function(f"() => document.querySelectorAll('#graph-svg g.node').length === "
                           f"{len(MARKUP) + 1}")
    assert set(drawn(page)[0]) == {"Kismet", *MARKUP.values()}  # drawn as the names they are
    labels = node_names(page)
    assert all(any(label.startswith(v[:30]) for label in labels) for v in MARKUP.values())
    # every hostile name is the text of a table cell, exactly
    cells = set(page.eval_on_selector_all("#facts-table td", "ts => ts.map(t => t.textContent)"))
    assert set(MARKUP.values()) <= cells
    # hover one: the tooltip shows it as text
    page.locator("#graph-svg g.node", has_text="img src").hover()
    assert 'onerror="window.__kgdb_pwned = 2"' in page.inner_text("#tooltip")
    assert page.evaluate("window.__kgdb_pwned") is None
    assert page.evaluate("document.querySelectorAll('#app img, #app script, #app iframe, "
                         "#app a[href]').length") == 0
    shot(page, "9-hostile")


def test_a_token_of_graph_b_cannot_list_or_draw_graph_a(page: Any, site: dict[str, Any]
                                                       ) -> None:
    sign_in(page, site, "b")
    assert page.eval_on_selector_all("#graph option", "os => os.map(o => o.value)") == [
        site["b"]]
    ask_pattern(page, "Who directed Kismet?", "Kismet|directed_by|UNKNOWN director 1")
    assert set(drawn(page)[0]) <= {"Zorblax Saga", "Quentin Quuxman"}  # B's own entities
    assert "William Dieterle" not in page.inner_text("#results")
    # asking for graph A with B's token, as a script on the page would: refused
    status = page.evaluate("""async ([graph, token]) => (await fetch('/retrieve', {
        method: 'POST', headers: {'Authorization': 'Bearer ' + token, 'X-Kgdb-Graph': graph,
        'Content-Type': 'application/json'}, body: JSON.stringify({question: 'q', options:
        {pattern: [['Kismet', 'directed_by', 'UNKNOWN 1']]}})})).status""",
                           [site["a"], site["tokens"]["b"]])
    assert status == 403
    explore = page.evaluate("""async ([graph, token]) => (await fetch('/explore', {
        method: 'POST', headers: {'Authorization': 'Bearer ' + token, 'X-Kgdb-Graph': graph,
        'Content-Type': 'application/json'}, body: JSON.stringify({id: 'Kismet'})})).status""",
                            [site["a"], site["tokens"]["b"]])
    assert explore == 403
    # a token of every graph lists the engine's graphs, both of these among them
    every = page.evaluate("""async (token) => (await fetch('/graphs', {headers:
        {'Authorization': 'Bearer ' + token}})).json()""", site["tokens"]["all"])
    assert {site["a"], site["b"]} <= set(every["graphs"]) and every["writes"] is False
    # the page itself holds nothing: without a token only the sign-in form shows
    page.click("#signout")
    page.wait_for_selector("#signin:not([hidden])")
    assert page.evaluate("sessionStorage.length") == 0
    shot(page, "10-signed-out")


# ---------------------------------------------------------------------- document evidence
DOCS = ROOT / "docs"


def ask_solver(page: Any, solver: str, question: str) -> None:
    page.select_option("#solver", solver)
    page.fill("#question", question)
    page.click("#ask-button")
    page.wait_for_function("() => /^(Evidence in|\\d{3}:)/.test(document.getElementById('status')"
                           ".textContent)")
    assert page.inner_text("#status").startswith("Evidence in"), page.inner_text("#status")


def kinds_drawn(page: Any) -> list[tuple[str, str]]:
    return [tuple(k) for k in page.eval_on_selector_all(
        "#graph-svg g.node", "gs => gs.map(g => [g.dataset.kind, g.querySelector('text')"
                             ".textContent])")]


def graphml_drawn(site: dict[str, Any], solver: str, question: str) -> set[tuple[str, str]]:
    """The (kind, name) of every node of the service's GraphML export of the same question."""
    import xml.etree.ElementTree as ET

    import httpx

    reply = httpx.post(site["url"] + "/retrieve?format=graphml", json={
        "question": question, "options": {"solver": solver}}, headers={
        "Authorization": "Bearer " + site["tokens"]["a"]}, timeout=60)
    assert reply.status_code == 200, reply.text
    ns = "{http://graphml.graphdrawing.org/xmlns}"
    out = set()
    for node in ET.fromstring(reply.content).iter(f"{ns}node"):
        data = {d.get("key"): d.text for d in node.findall(f"{ns}data")}
        out.add((str(data["kind"]), str(data["name"])))
    return out


def test_a_ppr_answer_draws_seeds_phrases_passages_and_a_legend(page: Any,
                                                                 site: dict[str, Any]) -> None:
    sign_in(page, site)
    question = "Who directed Kismet?"
    ask_solver(page, "ppr", question)
    drawn_kinds = kinds_drawn(page)
    kinds = {k for k, _ in drawn_kinds}
    assert {"question", "seed", "passage", "document"} <= kinds, drawn_kinds
    assert ("question", question) in drawn_kinds
    seeds = {name for k, name in drawn_kinds if k == "seed"}
    assert {"kismet", "william dieterle"} & seeds, seeds
    assert ("passage", "1. kismet#0000#000") in drawn_kinds and ("document", "kismet") in \
        drawn_kinds
    # the PageRank paths: question -> seed phrase -> passage -> document
    edges = set(page.eval_on_selector_all("#graph-svg g.edge", "gs => gs.map(g => "
                                          "g.dataset.kinds + ' ' + g.dataset.relation)"))
    assert {"question>seed names", "seed>passage in", "passage>document in"} <= edges or \
        {"question>seed near sentence names", "seed>passage in", "passage>document in"} <= \
        edges, edges
    # no label repeats itself; the legend names each kind drawn and nothing else
    assert not [name for _, name in drawn_kinds if re.fullmatch(r"(.+) \(\1\)", name)]
    legend = page.eval_on_selector_all("#legend li", "ls => ls.map(l => l.dataset.kind)")
    assert set(legend) - {"arrows", "pattern"} == kinds and "arrows" in legend
    assert "seed phrase" in page.inner_text("#legend")
    # no empty tables for a document solver: the passages, each with its rank and document
    assert page.is_hidden("#groups-section") and page.is_hidden("#facts-section")
    assert page.inner_text("#passages .passage .source >> nth=0").startswith("1. kismet")
    # the export draws the same graph
    assert graphml_drawn(site, "ppr", question) == set(drawn_kinds)
    # a passage's tooltip shows its text
    page.hover('#graph-svg g.node[data-kind="passage"] .dot >> nth=0')
    assert "directed by William Dieterle" in page.inner_text("#tooltip")
    page.mouse.move(0, 0)
    shot(page, "11-ppr")
    # docs/web-page.md shows it: from the answer to the passages
    top = page.locator("#results").bounding_box()
    end = page.locator("#passages").bounding_box()
    page.screenshot(path=str(DOCS / "web-page-ppr.png"), full_page=True, clip={
        "x": 40, "y": top["y"] - 10, "width": 1200, "height": end["y"] + end["height"] + 20
        - top["y"]})


def test_passage_solvers_draw_passages_and_the_entities_they_mention(
        page: Any, site: dict[str, Any]) -> None:
    sign_in(page, site)
    for solver in ("vector", "hybrid"):
        ask_solver(page, solver, "Who directed Kismet?")
        page.wait_for_function("() => document.querySelector('#graph-svg g.node"
                               "[data-kind=entity]')")  # once the mentions are read
        drawn_kinds = kinds_drawn(page)
        assert {k for k, _ in drawn_kinds} == {"passage", "document", "entity"}, drawn_kinds
        assert {("entity", "William Dieterle"), ("entity", "Kismet")} <= set(drawn_kinds)
        edges = set(page.eval_on_selector_all("#graph-svg g.edge", "gs => gs.map(g => "
                                              "g.dataset.kinds + ' ' + g.dataset.relation)"))
        assert edges == {"passage>document in", "passage>entity mentions"}
        assert page.is_visible("#graph-view") and page.is_hidden("#facts-section")
        assert graphml_drawn(site, solver, "Who directed Kismet?") == set(drawn_kinds)
    shot(page, "12-vector")


def test_an_error_clears_the_previous_result(page: Any, site: dict[str, Any]) -> None:
    sign_in(page, site)
    ask_solver(page, "ppr", "Who directed Kismet?")
    assert page.is_visible("#results") and page.locator("#graph-svg g.node").count() > 3
    page.fill("#question", "Who directed \x01 Kismet?")  # refused by the service: 422
    page.click("#ask-button")
    page.wait_for_function("() => /^\\d{3}:/.test(document.getElementById('status').textContent)")
    assert page.inner_text("#status").startswith("422:")
    assert page.is_hidden("#results")
    assert page.locator("#graph-svg g.node").count() == 0
    assert page.inner_text("#passages") == "" and page.inner_text("#statements") == ""


def test_another_graph_clears_the_result(page: Any, site: dict[str, Any]) -> None:
    sign_in(page, site, "all")
    page.select_option("#graph", site["a"])
    page.dispatch_event("#graph", "change")
    ask_solver(page, "vector", "Who directed Kismet?")
    assert "William Dieterle" in page.inner_text("#passages")
    page.select_option("#graph", site["b"])
    page.wait_for_function("() => document.getElementById('results').hidden")
    assert page.locator("#graph-svg g.node").count() == 0
    assert "William Dieterle" not in page.inner_text("#app")


def test_an_answer_of_the_previous_graph_is_not_drawn(page: Any, site: dict[str, Any]) -> None:
    """The graph changes while a streamed answer of the other one is still coming."""
    site["llm"].push(json.dumps({"divided": ["Kismet was directed by someone"],
                                 "triples": [["Kismet", "directed_by", "UNKNOWN director 1"]]}),
                     {"content": "William Dieterle directed Kismet, slowly.",
                      "chunk_delay": 0.3})
    sign_in(page, site, "all")
    page.select_option("#graph", site["a"])
    page.dispatch_event("#graph", "change")
    page.select_option("#solver", "pattern")
    page.fill("#question", "Who directed Kismet?")
    page.check("input[name=mode][value=ask]")
    page.click("#ask-button")
    page.wait_for_selector("#graph-svg g.node")  # A's evidence, the answer still coming
    page.select_option("#graph", site["b"])
    page.wait_for_function("() => document.getElementById('results').hidden")
    page.wait_for_timeout(3000)  # longer than the rest of the streamed answer
    assert page.is_hidden("#results") and page.locator("#graph-svg g.node").count() == 0
    assert page.inner_text("#answer") == ""


def test_the_streamed_answer_is_offered_only_with_an_llm(page: Any, site: dict[str, Any],
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    sign_in(page, site)
    assert page.is_visible("#mode")  # this server has the scripted LLM
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with LiveServer(create_app(site["config"], embedder=site["embedder"])) as bare:
        page.goto(bare.url + "/")
        page.fill("#token", site["tokens"]["a"])
        page.press("#token", "Enter")
        page.wait_for_selector("#app:not([hidden])")
        page.wait_for_function("() => document.querySelectorAll('#solver option').length > 0")
        assert page.is_hidden("#mode")
        assert page.is_checked("input[name=mode][value=retrieve]")
        ask_solver(page, "vector", "Who directed Kismet?")  # evidence only, no LLM asked


def test_highlights_stay_on_the_name_when_lower_casing_changes_lengths(
        page: Any, site: dict[str, Any]) -> None:
    """"İ" lower-cases to two code units: offsets found in the lower-cased text were one
    off in the text itself."""
    sign_in(page, site)
    page.evaluate("""() => window.kgdbPage.render({question: 'q', solver: 'vector',
        facts: [{head: 'Kismet', relation: 'r', tail: 'İzmir', group: 0}], groups: [],
        passages: [{id: 'no-such-chunk', document: 'd', text:
        'İİ İstanbul, then Kismet and KISMET; İzmir.', score: 0.5,
        source: 'atlas.pdf p. 7'}], statements: [], timings_ms: {}, llm: {}})""")
    marks = page.eval_on_selector_all("#passages mark", "ms => ms.map(m => m.textContent)")
    assert marks == ["Kismet", "KISMET", "İzmir"]
    assert "d \u2014 atlas.pdf p. 7" in page.inner_text("#passages .source")
    names = {n for _, n in kinds_drawn(page)}
    assert "1. atlas.pdf p. 7" in names
