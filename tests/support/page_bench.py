"""The web page's numbers, printed as JSON (``make bench-page``; nothing is asserted): its size,
the time until it is interactive (navigation start to its script having wired the form,
median of 5 cold loads) and the time to draw an evidence graph of 500 entities (layout, SVG,
tables, until the next frame is painted; median of 5) in Debian's Chromium."""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from kgdb.config import Settings
from kgdb.serve.app import UI, ServeConfig, create_app
from kgdb.serve.tokens import TokenFile
from tests.support.live_server import LiveServer

CHROMIUM = os.environ.get("KGDB_CHROMIUM", "/usr/bin/chromium")


class _NoModel:
    """The page's numbers need no embedding model (nothing is asked)."""

    model_id = "none"
    dimension = 384

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        return np.zeros((len(texts), self.dimension), dtype=np.float32)


def evidence(nodes: int) -> dict[str, Any]:
    """An evidence JSON of ``nodes`` entities: a tree with some cross links, in 5 groups."""
    facts = []
    for i in range(1, nodes):
        facts.append({"head": f"entity {(i - 1) // 3}", "relation": f"rel_{i % 7}",
                      "tail": f"entity {i}", "head_id": f"e{(i - 1) // 3}", "tail_id": f"e{i}",
                      "score": 0.5, "group": 1 + i % 5, "chunks": [], "text": ""})
    for i in range(0, nodes - 50, 10):
        facts.append({"head": f"entity {i}", "relation": "cross", "tail": f"entity {i + 50}",
                      "head_id": f"e{i}", "tail_id": f"e{i + 50}", "score": 0.7, "group": 0,
                      "chunks": [], "text": ""})
    groups = [{"rank": g, "kind": "subgraph", "score": 0.1 * g,
               "nodes": {"UNKNOWN 1": {"id": f"e{g}", "name": f"entity {g}"}}}
              for g in range(1, 6)]
    return {"question": "bench", "solver": "pattern", "score_kind": "gsd", "facts": facts,
            "groups": groups, "passages": [], "documents": [], "statements": [],
            "timings_ms": {"embed": 1.0}, "llm": {"requests": 0, "tokens_in": 0,
                                                 "tokens_out": 0}}


def main() -> None:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        sys.exit(f"page bench: no Chromium at {CHROMIUM}: apt-get install -y chromium")
    home = Path(tempfile.mkdtemp(prefix="kgdb-page-bench-"))
    tokens = TokenFile(home / "tokens.json", [])
    tokens.add("bench", ("read",), ("*",))
    config = ServeConfig(Settings.from_env(), TokenFile.load(home / "tokens.json"))
    size = {name: (UI / name).stat().st_size for name in ("index.html", "app.js", "app.css")}
    with LiveServer(create_app(config, embedder=_NoModel())) as server, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                             args=["--no-sandbox", "--disable-gpu"])
        interactive = []
        for _ in range(5):
            context = browser.new_context()
            page = context.new_page()
            page.goto(server.url + "/")
            page.wait_for_selector("body[data-ready=true]", state="attached")
            interactive.append(page.evaluate("performance.now()"))
            context.close()
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(server.url + "/")
        page.wait_for_selector("body[data-ready=true]", state="attached")
        page.evaluate("document.getElementById('app').hidden = false; "
                      "document.getElementById('results').hidden = false")
        draw = []
        graph = evidence(500)
        for _ in range(5):
            draw.append(page.evaluate("""async (ev) => {
                const t0 = performance.now();
                window.kgdbPage.render(ev);
                await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
                return performance.now() - t0; }""", graph))
        drawn = page.evaluate("document.querySelectorAll('#graph-svg g.node').length")
        browser.close()
    print(json.dumps({
        "page_bytes": sum(size.values()), "files_bytes": size,
        "interactive_ms_median": round(statistics.median(interactive), 1),
        "interactive_ms": [round(x, 1) for x in interactive],
        "render_500_nodes_ms_median": round(statistics.median(draw), 1),
        "render_500_nodes_ms": [round(x, 1) for x in draw],
        "nodes_drawn": drawn, "facts": len(graph["facts"])}, indent=2))


if __name__ == "__main__":
    main()
