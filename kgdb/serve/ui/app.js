// kgdb's web page: ask a question, watch the answer stream, explore the evidence graph.
// No library, no build step. Every text from the server (names, passages, rules) reaches the
// page through textContent or an SVG text node, never as markup. The token lives in this
// tab's sessionStorage only.
"use strict";

(() => {
  const SVGNS = "http://www.w3.org/2000/svg";
  const TOKEN_KEY = "kgdb.token";
  const EXPAND_LIMIT = 25;
  const $ = (id) => document.getElementById(id);

  const state = {
    token: sessionStorage.getItem(TOKEN_KEY) || "",
    graph: "",
    solvers: [],
    evidence: null,
    nodes: new Map(), // id -> {id, name, variables[], groups[], x, y, properties?, labels?}
    edges: [],
    edgeKeys: new Set(),
    expanded: new Set(),
    mentions: {},
    columns: false,
    llm: false,
    generation: 0,
  };

  // ------------------------------------------------------------------ helpers
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : String(c));
    return e;
  }

  function svgEl(tag, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }

  function status(message, error) {
    const s = $("status");
    s.textContent = message || "";
    s.className = error ? "error" : "";
  }

  function score(value) {
    return value === null || value === undefined ? "" : Number(value).toFixed(4);
  }

  async function api(method, path, body, raw) {
    const headers = { Authorization: "Bearer " + state.token };
    if (state.graph) headers["X-Kgdb-Graph"] = state.graph;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const reply = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!reply.ok) {
      let message = reply.statusText;
      try { message = (await reply.json()).error.message; } catch (e) { /* not JSON */ }
      throw new Error(reply.status + ": " + message);
    }
    return raw ? reply : reply.json();
  }

  // ------------------------------------------------------------------ sign in
  async function signIn(token) {
    state.token = token;
    const graphs = await api("GET", "/graphs");
    sessionStorage.setItem(TOKEN_KEY, token);
    const select = $("graph");
    select.replaceChildren(...graphs.graphs.map((g) => el("option", { value: g }, g)));
    if (graphs.default && graphs.graphs.includes(graphs.default)) select.value = graphs.default;
    state.graph = select.value;
    $("who").textContent = "token " + graphs.token + (graphs.writes ? " (read, write)" : " (read)");
    const solvers = await api("GET", "/solvers");
    state.solvers = solvers.solvers;
    state.llm = Boolean(solvers.llm);
    // the streamed answer needs the server's LLM: offered only when it has one
    $("mode").hidden = !state.llm;
    if (!state.llm) document.querySelector("input[name=mode][value=retrieve]").checked = true;
    $("solver").replaceChildren(...state.solvers.map((s) => el("option", { value: s.name }, s.name)));
    showSolver();
    $("signin").hidden = true;
    $("app").hidden = false;
    await loadRulesets();
    status("Signed in.");
    $("question").focus();
  }

  function signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = "";
    location.reload();
  }

  // ------------------------------------------------------------------ the options form
  function fieldType(prop) {
    if (prop.anyOf) {
      const inner = prop.anyOf.find((p) => p.type !== "null");
      return inner ? Object.assign({}, inner, { default: prop.default, description: prop.description }) : prop;
    }
    return prop;
  }

  function showSolver() {
    const solver = state.solvers.find((s) => s.name === $("solver").value);
    if (!solver) return;
    $("solver-summary").textContent = solver.summary + (solver.retrieval_llm ? " (needs the LLM: " + solver.retrieval_llm + ")" : "");
    const box = $("options");
    box.replaceChildren(el("legend", {}, "Options of " + solver.name));
    for (const [name, raw] of Object.entries(solver.schema.properties || {})) {
      if (name === "solver") continue;
      const prop = fieldType(raw);
      const id = "opt-" + name;
      const help = raw.description || "";
      let input;
      if (name === "pattern") {
        input = el("textarea", { id, rows: "2", "data-kind": "pattern",
          placeholder: "Kismet|directed_by|UNKNOWN director 1 (one triple per line)" });
      } else if (prop.enum) {
        input = el("select", { id, "data-kind": "enum" }, ...prop.enum.map((v) => el("option", { value: String(v) }, String(v))));
        input.value = String(raw.default);
      } else if (prop.type === "boolean") {
        input = el("input", { id, type: "checkbox", "data-kind": "boolean" });
        input.checked = Boolean(raw.default);
      } else if (prop.type === "integer" || prop.type === "number") {
        input = el("input", { id, type: "number", "data-kind": prop.type, step: prop.type === "integer" ? "1" : "any" });
        if (prop.minimum !== undefined) input.min = prop.minimum;
        if (prop.maximum !== undefined) input.max = prop.maximum;
        if (raw.default !== undefined && raw.default !== null) input.value = raw.default;
      } else if (prop.type === "string") {
        input = el("input", { id, type: "text", "data-kind": "string" });
        if (raw.default) input.value = raw.default;
      } else {
        input = el("textarea", { id, rows: "1", "data-kind": "json", placeholder: "JSON" });
      }
      input.dataset.name = name;
      input.dataset.default = JSON.stringify(raw.default === undefined ? null : raw.default);
      input.title = help;
      const label = el("label", { for: id, class: name === "pattern" ? "pattern" : "" }, name + " ", input);
      label.title = help;
      box.append(label);
    }
  }

  function options() {
    const out = { solver: $("solver").value };
    for (const input of $("options").querySelectorAll("[data-name]")) {
      const name = input.dataset.name;
      const fallback = JSON.parse(input.dataset.default);
      let value;
      switch (input.dataset.kind) {
        case "pattern": {
          const lines = input.value.split("\n").map((l) => l.trim()).filter(Boolean);
          if (!lines.length) continue;
          value = lines.map((line) => {
            const parts = line.split("|").map((p) => p.trim());
            if (parts.length !== 3 || parts.some((p) => !p)) throw new Error("pattern: " + JSON.stringify(line) + " is not head|relation|tail");
            return parts;
          });
          break;
        }
        case "boolean": value = input.checked; break;
        case "integer": case "number":
          if (input.value === "") continue;
          value = Number(input.value);
          break;
        case "json":
          if (!input.value.trim()) continue;
          value = JSON.parse(input.value);
          break;
        default: value = input.value;
      }
      if (JSON.stringify(value) !== JSON.stringify(fallback)) out[name] = value;
    }
    return out;
  }

  // ------------------------------------------------------------------ asking
  async function ask(event) {
    event.preventDefault();
    const button = $("ask-button");
    button.disabled = true;
    clearResults();  // nothing of the previous answer stays while this one comes
    const generation = state.generation;
    const current = () => state.generation === generation;
    try {
      const body = { question: $("question").value, options: options() };
      const mode = state.llm ? document.querySelector("input[name=mode]:checked").value : "retrieve";
      status("Asking…");
      if (mode === "ask") {
        await askStreamed(body, current);
      } else {
        const started = performance.now();
        const evidence = await api("POST", "/retrieve", body);
        if (!current()) return;  // another graph was chosen meanwhile
        render(evidence);
        $("answer").textContent = "(evidence only: no answer was asked for)";
        status("Evidence in " + Math.round(performance.now() - started) + " ms.");
      }
    } catch (error) {
      if (!current()) return;
      clearResults();  // an error shows no answer, least of all the previous one
      status(error.message, true);
    } finally {
      button.disabled = false;
    }
  }

  async function askStreamed(body, current) {
    const reply = await api("POST", "/ask", Object.assign({}, body, { stream: true }), true);
    const reader = reply.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (!current()) { reader.cancel(); return; }  // another graph was chosen meanwhile
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        handleEvent(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
      }
    }
  }

  function handleEvent(block) {
    let kind = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) kind = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    const payload = JSON.parse(data.join("\n"));
    if (kind === "evidence") {
      render(payload);
      status("Evidence found; the answer is being written…");
    } else if (kind === "token") {
      $("answer").append(payload.text);
    } else if (kind === "done") {
      $("answer").textContent = payload.answer || "";
      if (payload.verdict !== null && payload.verdict !== undefined) $("answer").append(" (verdict: " + payload.verdict + ")");
      showUsage(payload.llm);
      showTimings(payload.timings_ms);
      status("Answered.");
    } else if (kind === "error") {
      throw new Error(payload.error.message + " (request " + payload.error.request_id + ")");
    }
  }

  function showUsage(llm) {
    if (!llm || !llm.requests) { $("usage").textContent = ""; return; }
    $("usage").textContent = "LLM: " + llm.requests + " request" + (llm.requests === 1 ? "" : "s") +
      ", " + llm.tokens_in + " tokens in, " + llm.tokens_out + " out";
  }

  function showTimings(timings) {
    $("timings").textContent = Object.entries(timings || {}).map(([k, v]) => k + " " + Number(v).toFixed(1) + " ms").join(", ");
  }

  // ------------------------------------------------------------------ evidence
  // The drawing is the graph of kgdb/retrieve/export.py's evidence_graph (the exports draw the
  // same): facts as entities and relationships; passages with their documents and the
  // entities they mention; for ppr the question, its seed phrases and the PageRank paths.
  const KINDS = {
    question: ["the question", "#222222"],
    seed: ["seed phrase: the question or a sentence near it names it", "#e15759"],
    phrase: ["phrase reached over a synonym edge", "#f28e2b"],
    passage: ["passage (chunk), numbered by rank", "#4e79a7"],
    document: ["document", "#59a14f"],
    entity: ["entity (colour: its group; dashed ring: a pattern node)", "#888888"],
  };
  const LAYERS = { question: 0, seed: 1, phrase: 2, passage: 3, document: 4, entity: 5 };
  const PLACING = ["passage", "phrase", "document", "seed", "entity", "question"];
  const COLUMN = 240, ROW = 44, MARGIN = 40;
  const MENTIONS_DRAWN = 8;
  const SEED_RELATION = { question: "names", sentence: "near sentence names", name: "near name" };
  const QUIET = new Set(["in", "mentions", "similar", "synonym", "names", "near sentence names",
    "near name", "title of"]);

  function render(evidence) {
    const started = performance.now();
    $("results").hidden = false;
    state.evidence = evidence;
    state.mentions = {};
    buildGraph(evidence, {});
    place();
    draw();
    fillTables(evidence);
    showTimings(evidence.timings_ms);
    showUsage(evidence.llm);
    $("node-panel").replaceChildren();
    return performance.now() - started;
  }

  // Everything the previous answer showed, gone (an error, another graph).
  function clearResults() {
    state.generation += 1;  // an answer still on its way is dropped when it comes
    state.evidence = null;
    state.nodes = new Map();
    state.edges = [];
    state.edgeKeys = new Set();
    state.expanded = new Set();
    state.mentions = {};
    state.columns = false;
    $("graph-svg").replaceChildren();
    $("legend").replaceChildren();
    for (const id of ["answer", "usage", "graph-summary", "timings"]) $(id).textContent = "";
    for (const id of ["node-panel", "passages", "statements"]) $(id).replaceChildren();
    for (const id of ["groups-table", "facts-table"]) $(id).tBodies[0].replaceChildren();
    hideTip();
    $("results").hidden = true;
  }

  function passageSource(p) {
    const source = p.source;
    if (!source) return "";
    if (typeof source === "object") {
      const where = [source.file || source.document].filter(Boolean).map(String);
      if (source.page) where.push("p. " + source.page);
      if (source.section) where.push("\u00a7 " + source.section);
      return where.join(" ");
    }
    return String(source);
  }

  function nodeOf(kind, id, name) {
    const key = kind + ":" + id;
    let n = state.nodes.get(key);
    if (!n) {
      n = { key, id, kind, name: name || id, variables: [], groups: [], detail: "", score: null };
      state.nodes.set(key, n);
    }
    return n;
  }

  function nodeFor(id, name) { return nodeOf("entity", id, name); }

  function link(a, relation, b, group, value) {
    return addEdge(a.key, b.key, relation, group, value);
  }

  function buildGraph(evidence, mentions) {
    state.nodes = new Map();
    state.edges = [];
    state.edgeKeys = new Set();
    state.expanded = new Set();
    for (const group of evidence.groups || []) {
      for (const [variable, node] of Object.entries(group.nodes || {})) {
        const n = nodeFor(node.id, node.name);
        if (!n.variables.includes(variable)) n.variables.push(variable);
      }
    }
    const entityNames = new Map();
    for (const f of evidence.facts || []) {
      const ends = [[f.head_id || f.head, f.head], [f.tail_id || f.tail, f.tail]].map(([id, name]) => {
        const n = nodeFor(id, name);
        if (!entityNames.has(name)) entityNames.set(name, n);
        if (f.group && !n.groups.includes(f.group)) n.groups.push(f.group);
        return n;
      });
      link(ends[0], f.relation, ends[1], f.group, f.score);
    }
    const seeds = evidence.seeds;
    const question = Array.isArray(seeds) ? nodeOf("question", "", evidence.question) : null;
    const shown = new Map();
    (evidence.passages || []).forEach((p, i) => {
      const where = passageSource(p);
      const n = nodeOf("passage", p.id, (i + 1) + ". " + (where || p.id));
      n.detail = (where ? where + "\n" : "") + short(p.text, 300);
      n.score = p.score;
      shown.set(p.id, n);
      link(n, "in", nodeOf("document", p.document, p.document));
    });
    for (const f of evidence.facts || []) {
      for (const chunk of f.chunks || []) {
        if (shown.has(chunk)) for (const name of [f.head, f.tail]) link(shown.get(chunk), "mentions", entityNames.get(name));
      }
    }
    if (question) {
      for (const s of seeds) {
        if (!s || typeof s !== "object") continue;
        if (s.kind === "passage") {
          if (shown.has(String(s.chunk))) link(question, "similar", shown.get(String(s.chunk)), 0, numberOr(s.weight));
          continue;
        }
        const phrase = nodeOf("seed", String(s.phrase), String(s.phrase));
        phrase.score = numberOr(s.weight);
        if (s.source) phrase.detail = "named by: " + short(String(s.source), 200);
        link(question, SEED_RELATION[s.kind] || String(s.kind), phrase, 0, phrase.score);
      }
      const bridged = new Set((Array.isArray(evidence.bridges) ? evidence.bridges : [])
        .filter((b) => b && typeof b === "object")
        .map((b) => JSON.stringify([String(b.from), String(b.phrase), String(b.chunk)])));
      for (const steps of Object.values(evidence.paths && typeof evidence.paths === "object" ? evidence.paths : {})) {
        for (const path of Array.isArray(steps) ? steps : []) {
          if (Array.isArray(path) && path.length >= 2) drawPath(path.map(String), bridged, shown);
        }
      }
    } else {
      for (const [chunk, n] of shown) {
        for (const name of (mentions[chunk] || []).slice(0, MENTIONS_DRAWN)) {
          link(n, "mentions", entityNames.get(name) || nodeFor(name, name));
        }
      }
    }
  }

  function drawPath(steps, bridged, shown) {
    const last = steps[steps.length - 1];
    const chunk = shown.get(last) || nodeOf("passage", last, last);
    if (bridged.has(JSON.stringify(steps))) {
      const start = shown.get(steps[0]) || nodeOf("passage", steps[0], steps[0]);
      const title = state.nodes.get("seed:" + steps[1]) || nodeOf("phrase", steps[1], steps[1]);
      link(start, "names", title);
      link(title, "title of", chunk);
      return;
    }
    let at = state.nodes.get("seed:" + steps[0]) || nodeOf("seed", steps[0], steps[0]);
    for (const via of steps.slice(1, -1)) {
      const step = state.nodes.get("seed:" + via) || nodeOf("phrase", via, via);
      link(at, "synonym", step);
      at = step;
    }
    link(at, "in", chunk);
  }

  function numberOr(value) { return typeof value === "number" ? value : null; }

  function addEdge(source, target, relation, group, value) {
    const key = JSON.stringify([source, relation, target]);
    if (state.edgeKeys.has(key)) return false;
    state.edgeKeys.add(key);
    state.edges.push({ source, target, relation, group: group || 0, score: value === undefined ? null : value });
    return true;
  }

  function inColumns() { return [...state.nodes.values()].some((n) => n.kind !== "entity"); }

  // Positions for every node: document evidence in columns, facts alone by force.
  function place() {
    state.columns = inColumns();  // decided by the evidence: an expansion keeps the layout
    if (state.columns) columns();
    else layout(60);
  }

  // One column per kind (LAYERS); the passages by rank, each other column ordered by its
  // nodes' neighbours already placed. export.py's columns() does the same.
  function columns() {
    const nodes = [...state.nodes.values()];
    const used = [...new Set(nodes.map((n) => LAYERS[n.kind]))].sort((a, b) => a - b);
    const neighbours = new Map();
    for (const e of state.edges) {
      if (!neighbours.has(e.source)) neighbours.set(e.source, []);
      if (!neighbours.has(e.target)) neighbours.set(e.target, []);
      neighbours.get(e.source).push(e.target);
      neighbours.get(e.target).push(e.source);
    }
    const rank = new Map();
    for (const kind of PLACING) {
      const members = nodes.filter((n) => n.kind === kind);
      const order = new Map(members.map((n, i) => [n.key, i]));
      const centre = (n) => {
        const placed = (neighbours.get(n.key) || []).filter((k) => rank.has(k)).map((k) => rank.get(k));
        return placed.length ? placed.reduce((a, b) => a + b, 0) / placed.length : Infinity;
      };
      if (kind !== "passage") {
        const c = new Map(members.map((n) => [n.key, centre(n)]));
        members.sort((a, b) => (c.get(a.key) - c.get(b.key)) || (order.get(a.key) - order.get(b.key)));
      }
      members.forEach((n, i) => rank.set(n.key, i));
    }
    const tallest = Math.max(1, ...used.map((l) => nodes.filter((n) => LAYERS[n.kind] === l).length));
    used.forEach((layer, column) => {
      const members = nodes.filter((n) => LAYERS[n.kind] === layer).sort((a, b) => rank.get(a.key) - rank.get(b.key));
      const top = MARGIN + (tallest - members.length) * ROW / 2;
      members.forEach((n, i) => { n.x = MARGIN + column * COLUMN; n.y = top + i * ROW; n.fixed = true; });
    });
  }

  // Fruchterman-Reingold on the nodes without a position (and gently on the others, but
  // never on a document drawing's columns).
  function layout(iterations, around) {
    const nodes = [...state.nodes.values()];
    const n = nodes.length;
    if (!n) return;
    const w = 900, h = 600;
    nodes.forEach((d, i) => {
      if (d.x === undefined) {
        const a = (2 * Math.PI * i) / n;
        const cx = around ? around.x : w / 2, cy = around ? around.y : h / 2;
        const r = around ? 80 : Math.min(w, h) * 0.4;
        d.x = cx + Math.cos(a) * r;
        d.y = cy + Math.sin(a) * r;
      }
    });
    const index = new Map(nodes.map((d, i) => [d.key, i]));
    const k = Math.sqrt((w * h) / n) * 0.6;
    let heat = around ? 20 : Math.min(w, h) / 10;
    const dx = new Float64Array(n), dy = new Float64Array(n);
    for (let it = 0; it < iterations; it++) {
      dx.fill(0); dy.fill(0);
      for (let i = 0; i < n; i++) {
        const a = nodes[i];
        for (let j = i + 1; j < n; j++) {
          const b = nodes[j];
          const ex = a.x - b.x, ey = a.y - b.y;
          const d2 = ex * ex + ey * ey || 0.01;
          const f = (k * k) / d2;
          dx[i] += ex * f; dy[i] += ey * f;
          dx[j] -= ex * f; dy[j] -= ey * f;
        }
      }
      for (const e of state.edges) {
        const i = index.get(e.source), j = index.get(e.target);
        if (i === j) continue;
        const ex = nodes[i].x - nodes[j].x, ey = nodes[i].y - nodes[j].y;
        const f = Math.sqrt(ex * ex + ey * ey) / k;
        dx[i] -= ex * f; dy[i] -= ey * f;
        dx[j] += ex * f; dy[j] += ey * f;
      }
      for (let i = 0; i < n; i++) {
        if (nodes[i].fixed) continue;
        dx[i] -= (nodes[i].x - w / 2) * 0.02;
        dy[i] -= (nodes[i].y - h / 2) * 0.02;
        const len = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]) || 0.01;
        const step = Math.min(len, heat) / len;
        nodes[i].x += dx[i] * step;
        nodes[i].y += dy[i] * step;
      }
      heat *= 0.95;
    }
  }

  function groupClass(groups) {
    if (!groups || !groups.length) return "gx";
    return "g" + (((groups[0] - 1) % 10) + 1);
  }

  function label(d) {
    const shown = d.variables.filter((v) => v !== d.name);  // "Kismet", not "Kismet (Kismet)"
    return short(d.name, 40) + (shown.length ? " (" + shown.join(", ") + ")" : "");
  }

  // A node's mark (export.py's _shape draws the same): a diamond for the question, a square
  // for a passage, a tall box for a document, a circle otherwise.
  function shape(kind, x, y, cls) {
    if (kind === "question") return svgEl("polygon", { class: "dot " + cls, points: [x, y - 13, x + 13, y, x, y + 13, x - 13, y].join(" ") });
    if (kind === "passage") return svgEl("rect", { class: "dot " + cls, x: x - 10, y: y - 10, width: 20, height: 20 });
    if (kind === "document") return svgEl("rect", { class: "dot " + cls, x: x - 8, y: y - 12, width: 16, height: 24 });
    return svgEl("circle", { class: "dot " + cls, cx: x, cy: y, r: kind === "seed" || kind === "phrase" ? 9 : 11 });
  }

  function kindClass(d) { return d.kind === "entity" ? groupClass(d.groups) : "k-" + d.kind; }

  function draw() {
    const svg = $("graph-svg");
    const nodes = [...state.nodes.values()];
    svg.replaceChildren();
    const empty = !nodes.length;
    $("graph-view").hidden = empty;
    $("legend").hidden = empty;
    if (empty) {  // no box to stare at: say why
      $("graph-summary").textContent = "Nothing to draw: this evidence has no facts and no passages.";
      $("legend").replaceChildren();
      return;
    }
    const columnsMode = state.columns;
    const defs = svgEl("defs");
    const marker = svgEl("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svgEl("path", { d: "M0,0L10,5L0,10z", fill: "#999" }));
    defs.append(marker);
    svg.append(defs);
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const d of nodes) {
      x0 = Math.min(x0, d.x); y0 = Math.min(y0, d.y); x1 = Math.max(x1, d.x); y1 = Math.max(y1, d.y);
    }
    const m = columnsMode ? MARGIN : 90;
    const box = [x0 - m, y0 - m, x1 - x0 + 2 * m + (columnsMode ? 200 : 0), y1 - y0 + 2 * m];
    svg.setAttribute("viewBox", box.join(" "));
    // a document drawing keeps its proportions (its text stays readable); facts fill the box
    svg.style.height = columnsMode ? Math.round(Math.min(1600, Math.max(160, box[3] * 1.1))) + "px" : "";
    const edgeLayer = svgEl("g", { class: "edges" });
    const nodeLayer = svgEl("g", { class: "nodes" });
    for (const e of state.edges) {
      const a = state.nodes.get(e.source), b = state.nodes.get(e.target);
      const ex = b.x - a.x, ey = b.y - a.y;
      const len = Math.sqrt(ex * ex + ey * ey) || 1;
      const g = svgEl("g", { class: "edge", "data-relation": e.relation, "data-source": a.id, "data-target": b.id,
        "data-kinds": a.kind + ">" + b.kind });
      let mid;
      if (columnsMode && Math.abs(ex) < 1) {  // within a column: an arc to its right
        const bend = a.x + 30 + Math.abs(ey) / 4;
        g.append(svgEl("path", { d: "M" + (a.x + 10) + "," + a.y + " Q" + bend + "," + (a.y + b.y) / 2 + " " + (b.x + 10) + "," + b.y, fill: "none", "marker-end": "url(#arrow)" }));
        mid = [bend - 10, (a.y + b.y) / 2];
      } else {
        g.append(svgEl("line", { x1: a.x + (ex / len) * 13, y1: a.y + (ey / len) * 13, x2: b.x - (ex / len) * 13, y2: b.y - (ey / len) * 13, "marker-end": "url(#arrow)" }));
        mid = [(a.x + b.x) / 2, (a.y + b.y) / 2 - 4];
      }
      const title = svgEl("title");
      title.textContent = e.relation + (e.score === null || e.score === undefined ? "" : " (" + score(e.score) + ")");
      g.append(title);
      if (!(columnsMode && QUIET.has(e.relation))) {
        const text = svgEl("text", { x: mid[0], y: mid[1] });
        text.textContent = short(e.relation, 40);
        g.append(text);
      }
      edgeLayer.append(g);
    }
    for (const d of nodes) {
      const expandable = d.kind === "entity";
      const g = svgEl("g", { class: "node " + d.kind + (state.expanded.has(d.key) ? " expanded" : ""), tabindex: 0, role: "button",
        "data-id": d.id, "data-kind": d.kind, "data-key": d.key });
      g.setAttribute("aria-label", d.kind + " " + d.name + (d.variables.length ? " (pattern node " + d.variables.join(", ") + ")" : "") +
        (expandable ? ": expand its neighbours" : ": show it"));
      if (d.variables.length) g.append(svgEl("circle", { class: "ring", cx: d.x, cy: d.y, r: 17 }));
      g.append(shape(d.kind, d.x, d.y, kindClass(d)));
      const text = columnsMode  // above the mark: the arrows leave it to the right
        ? svgEl("text", { x: d.x - 12, y: d.kind === "question" ? d.y + 30 : d.y - 15, class: "side" })
        : svgEl("text", { x: d.x, y: d.y + 27 });
      text.textContent = columnsMode ? short(label(d), 36) : label(d);
      g.append(text);
      const act = () => (expandable ? expand(d.id) : showNode(d));
      g.addEventListener("mouseenter", (ev) => showTip(d, ev));
      g.addEventListener("mouseleave", hideTip);
      g.addEventListener("focus", () => showTip(d));
      g.addEventListener("blur", hideTip);
      g.addEventListener("click", act);
      g.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); act(); }
      });
      nodeLayer.append(g);
    }
    svg.append(edgeLayer, nodeLayer);
    drawLegend(nodes);
    const count = (kind) => nodes.filter((d) => d.kind === kind).length;
    const parts = ["question", "seed", "phrase", "passage", "document", "entity"].filter(count).map((kind) => {
      const c = count(kind);
      const names = { question: "question", seed: "seed phrase", phrase: "phrase", passage: "passage", document: "document", entity: "entit" };
      return c + " " + names[kind] + (kind === "entity" ? (c === 1 ? "y" : "ies") : (c === 1 ? "" : "s"));
    });
    $("graph-summary").textContent = parts.join(", ") + ", " + state.edges.length + " edge" + (state.edges.length === 1 ? "" : "s") +
      (count("entity") ? "; click or press Enter on an entity to expand it." : ".");
  }

  function drawLegend(nodes) {
    const items = Object.entries(KINDS).filter(([kind]) => nodes.some((d) => d.kind === kind)).map(([kind, [text]]) => {
      const swatch = svgEl("svg", { viewBox: "-14 -14 28 28", width: 18, height: 18, "aria-hidden": "true" });
      swatch.append(shape(kind, 0, 0, kind === "entity" ? "g1" : "k-" + kind));
      return el("li", { "data-kind": kind }, swatch, " " + kind + ": " + text);
    });
    if (nodes.some((d) => d.variables.length)) {
      const swatch = svgEl("svg", { viewBox: "-19 -19 38 38", width: 18, height: 18, "aria-hidden": "true" });
      swatch.append(svgEl("circle", { class: "ring", cx: 0, cy: 0, r: 17 }));
      items.push(el("li", { "data-kind": "pattern" }, swatch, " dashed ring: a pattern node (the variable it matched in brackets)"));
    }
    const arrows = arrowsLegend(nodes);
    if (arrows) items.push(el("li", { "data-kind": "arrows" }, arrows));
    $("legend").replaceChildren(el("span", { class: "hint" }, "Legend"), el("ul", {}, ...items));
  }

  // What the arrows of a document drawing mean (export.py's arrows_legend says the same).
  function arrowsLegend(nodes) {
    const has = (kind) => nodes.some((d) => d.kind === kind);
    const parts = [];
    if (has("seed")) parts.push("question \u2192 seed phrase (\u2192 synonym) \u2192 passage: a PageRank path");
    if (has("passage") && has("document")) parts.push("passage \u2192 its document");
    if (has("passage") && has("entity")) parts.push("passage \u2192 an entity it mentions");
    return parts.length ? "arrows: " + parts.join("; ") : "";
  }

  function showNode(d) {
    $("node-panel").replaceChildren(el("h3", {}, d.name), describe(d));
  }

  function short(text, limit) {
    text = String(text);
    return text.length <= limit ? text : text.slice(0, limit - 1) + "…";
  }

  function describe(d) {
    const list = el("dl");
    const add = (k, v) => { list.append(el("dt", {}, k), el("dd", {}, v)); };
    add("kind", d.kind);
    add("name", d.name);
    if (d.id !== d.name && d.id !== "") add("id", d.id);
    if (d.score !== null && d.score !== undefined) add("score", score(d.score));
    if (d.detail) add(d.kind === "passage" ? "text" : "detail", d.detail);
    if (d.labels && d.labels.length) add("labels", d.labels.join(", "));
    if (d.variables.length) add("pattern node", d.variables.join(", "));
    if (d.groups.length) add("groups", d.groups.join(", "));
    for (const [k, v] of Object.entries(d.properties || {})) {
      if (k !== "id" && k !== "name") add(k, typeof v === "string" ? v : JSON.stringify(v));
    }
    if (d.kind === "entity" && !d.properties) add("properties", "loading…");
    return list;
  }

  function showTip(d, ev) {
    const tip = $("tooltip");
    tip.replaceChildren(describe(d));
    tip.hidden = false;
    tip.dataset.key = d.key;
    if (d.kind === "entity" && !d.properties && !d.loading) {  // its properties, once, from the read-only endpoint
      d.loading = true;
      api("POST", "/explore", { id: d.id, limit: 1 }).then((found) => {
        d.properties = found.node.properties;
        d.labels = found.node.labels;
        if (!tip.hidden && tip.dataset.key === d.key) tip.replaceChildren(describe(d));
      }).catch(() => { d.properties = {}; });
    }
    const box = $("graph-view").getBoundingClientRect();
    const x = ev ? ev.clientX - box.left : box.width / 2;
    const y = ev ? ev.clientY - box.top : 10;
    tip.style.left = Math.min(x + 12, box.width - 200) + "px";
    tip.style.top = (y + 12) + "px";
  }

  function hideTip() { $("tooltip").hidden = true; }

  // A neighbour's kind in the drawing: a chunk or a document the drawing may already show.
  function kindOf(labels) {
    if ((labels || []).includes("Chunk")) return "passage";
    if ((labels || []).includes("Document")) return "document";
    return "entity";
  }

  async function expand(id) {
    const evidence = state.evidence;
    try {
      const found = await api("POST", "/explore", { id, limit: EXPAND_LIMIT });
      if (state.evidence !== evidence) return;  // another answer (or none) since
      const center = nodeFor(id, found.node.name);
      center.properties = found.node.properties;
      center.labels = found.node.labels;
      let added = 0;
      for (const m of found.neighbours) {
        const kind = kindOf(m.labels);
        const isNew = !state.nodes.has(kind + ":" + m.id);
        const n = nodeOf(kind, m.id, m.name);
        n.properties = m.properties;
        n.labels = m.labels;
        if (isNew) { n.x = undefined; added += 1; }
        if (m.outgoing) link(center, m.relation, n, 0, null);
        else link(n, m.relation, center, 0, null);
      }
      state.expanded.add(center.key);
      layout(30, center);
      draw();
      const panel = $("node-panel");
      const heading = el("h3", {}, center.name);
      const note = found.capped
        ? el("p", { class: "capped" }, "Showing the first " + found.limit + " neighbours: this entity has more (capped).")
        : el("p", {}, found.neighbours.length + " neighbours (" + added + " new).");
      panel.replaceChildren(heading, describe(center), note);
      const again = document.querySelector('#graph-svg .node[data-key="' + CSS.escape(center.key) + '"]');
      if (again) again.focus();
      status("Expanded " + short(center.name, 60) + ".");
    } catch (error) {
      status(error.message, true);
    }
  }

  function fillTables(evidence) {
    const groups = $("groups-table").tBodies[0];
    groups.replaceChildren(...(evidence.groups || []).map((g) => el("tr", {},
      el("td", {}, g.rank), el("td", {}, g.kind), el("td", {}, score(g.score)),
      el("td", {}, Object.entries(g.nodes || {}).map(([v, n]) => v + " = " + n.name).join("; ")))));
    $("groups-section").hidden = !(evidence.groups || []).length;
    const facts = $("facts-table").tBodies[0];
    facts.replaceChildren(...(evidence.facts || []).map((f) => el("tr", {},
      el("td", {}, f.group || ""), el("td", {}, f.head), el("td", {}, f.relation),
      el("td", {}, f.tail), el("td", {}, score(f.score)))));
    $("facts-section").hidden = !(evidence.facts || []).length;
    showPassages(evidence, {});
    if ((evidence.passages || []).length) {
      api("POST", "/mentions", { chunks: evidence.passages.map((p) => p.id) })
        .then((found) => {
          if (state.evidence !== evidence) return;  // another answer (or none) since
          state.mentions = found.mentions;
          showPassages(evidence, found.mentions);
          if (!Array.isArray(evidence.seeds) && !state.expanded.size) {  // draw what they mention
            buildGraph(evidence, found.mentions);
            place();
            draw();
          }
        })
        .catch((error) => status(error.message, true));
    }
    $("statements").replaceChildren(...(evidence.statements || []).map((s, i) => {
      const text = s.cypher + (Object.keys(s.params || {}).length ? "\n// params: " + JSON.stringify(s.params) : "");
      const copy = el("button", { type: "button", class: "copy", "aria-label": "copy statement " + (i + 1) }, "Copy");
      copy.addEventListener("click", () => copyText(s.cypher, copy));
      return el("div", { class: "statement" }, copy, el("pre", {}, text));
    }));
  }

  function showPassages(evidence, mentions) {
    const names = (evidence.facts || []).flatMap((f) => [f.head, f.tail]);
    $("passages").replaceChildren(...(evidence.passages || []).map((p, i) => {
      const where = passageSource(p);
      const head = (i + 1) + ". " + p.document + (where ? " \u2014 " + where : "") +
        (p.score === null || p.score === undefined ? "" : "  (" + score(p.score) + ")");
      return el("div", { class: "passage", "data-id": p.id }, el("p", { class: "hint source" }, head),
        highlighted(p.text, [...new Set(names.concat(mentions[p.id] || []))].filter((n) => n && n.length >= 2)));
    }));
    if (!(evidence.passages || []).length) $("passages").replaceChildren(el("p", { class: "hint" }, "No passages."));
  }

  // The passage's text with each mention of an entity of the evidence in a <mark>. Matched on
  // the text itself, ignoring case by simple case folding (the "iu" flags), so that every
  // offset is the text's: lower-casing first changes lengths ("\u0130" becomes two code units).
  function highlighted(text, names) {
    const spans = [];
    for (const name of names) {
      const pattern = new RegExp(name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"), "giu");
      for (const found of text.matchAll(pattern)) {
        if (found[0].length) spans.push([found.index, found.index + found[0].length]);
      }
    }
    spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    const p = el("p");
    let pos = 0;
    for (const [start, end] of spans) {
      if (start < pos) continue;
      p.append(text.slice(pos, start), el("mark", {}, text.slice(start, end)));
      pos = end;
    }
    p.append(text.slice(pos));
    return p;
  }

  async function copyText(text, button) {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "Copied";
    } catch (error) {
      button.textContent = "Copy failed: select the text";
    }
  }

  // ------------------------------------------------------------------ rules
  async function loadRulesets() {
    try {
      const health = await api("GET", "/health");
      const names = health.rulesets || [];
      $("ruleset").replaceChildren(...names.map((r) => el("option", { value: r }, r)));
      $("rules").hidden = !names.length;
    } catch (error) {
      $("rules").hidden = true;
    }
  }

  async function evaluateRules(event) {
    event.preventDefault();
    try {
      const facts = JSON.parse($("facts").value || "{}");
      const result = await api("POST", "/rules/eval", { ruleset: $("ruleset").value, facts });
      const table = $("conclusions-table");
      table.tBodies[0].replaceChildren(...result.conclusions.map((c) => el("tr", {},
        el("td", {}, c.concept), el("td", {}, c.type), el("td", {}, c.name),
        el("td", {}, c.rule), el("td", {}, c.location))));
      table.hidden = false;
      status(result.conclusions.length + " conclusion" + (result.conclusions.length === 1 ? "" : "s") + ".");
    } catch (error) {
      status(error.message, true);
    }
  }

  // ------------------------------------------------------------------ start
  function start() {
    $("signin-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      try { await signIn($("token").value.trim()); } catch (error) { status(error.message, true); }
    });
    $("signout").addEventListener("click", signOut);
    $("graph").addEventListener("change", async () => {
      state.graph = $("graph").value;
      clearResults();  // that answer was another graph's
      status("Graph " + state.graph + ".");
      await loadRulesets();
    });
    $("solver").addEventListener("change", showSolver);
    $("ask-form").addEventListener("submit", ask);
    $("rules-form").addEventListener("submit", evaluateRules);
    if (state.token) signIn(state.token).catch((error) => { sessionStorage.removeItem(TOKEN_KEY); status(error.message, true); });
    document.body.dataset.ready = "true";
  }

  // For measurements (kgdb bench page): draw an evidence JSON, return the milliseconds.
  window.kgdbPage = { render };
  start();
})();
