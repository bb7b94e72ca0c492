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
    state.solvers = (await api("GET", "/solvers")).solvers;
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
    try {
      const body = { question: $("question").value, options: options() };
      const mode = document.querySelector("input[name=mode]:checked").value;
      $("results").hidden = false;
      $("answer").textContent = "";
      $("usage").textContent = "";
      status("Asking…");
      if (mode === "ask") {
        await askStreamed(body);
      } else {
        const started = performance.now();
        render(await api("POST", "/retrieve", body));
        $("answer").textContent = "(evidence only: no answer was asked for)";
        status("Evidence in " + Math.round(performance.now() - started) + " ms.");
      }
    } catch (error) {
      status(error.message, true);
    } finally {
      button.disabled = false;
    }
  }

  async function askStreamed(body) {
    const reply = await api("POST", "/ask", Object.assign({}, body, { stream: true }), true);
    const reader = reply.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
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
  function render(evidence) {
    const started = performance.now();
    state.evidence = evidence;
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
    for (const f of evidence.facts || []) {
      const head = f.head_id || f.head;
      const tail = f.tail_id || f.tail;
      for (const [id, name] of [[head, f.head], [tail, f.tail]]) {
        const n = nodeFor(id, name);
        if (f.group && !n.groups.includes(f.group)) n.groups.push(f.group);
      }
      addEdge(head, tail, f.relation, f.group, f.score);
    }
    layout(60);
    draw();
    fillTables(evidence);
    showTimings(evidence.timings_ms);
    showUsage(evidence.llm);
    $("node-panel").replaceChildren();
    return performance.now() - started;
  }

  function nodeFor(id, name) {
    let n = state.nodes.get(id);
    if (!n) {
      n = { id, name: name || id, variables: [], groups: [] };
      state.nodes.set(id, n);
    }
    return n;
  }

  function addEdge(source, target, relation, group, value) {
    const key = JSON.stringify([source, relation, target]);
    if (state.edgeKeys.has(key)) return false;
    state.edgeKeys.add(key);
    state.edges.push({ source, target, relation, group: group || 0, score: value });
    return true;
  }

  // Fruchterman-Reingold on the nodes without a position (and gently on the others).
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
    const index = new Map(nodes.map((d, i) => [d.id, i]));
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

  function draw() {
    const svg = $("graph-svg");
    const nodes = [...state.nodes.values()];
    svg.replaceChildren();
    const defs = svgEl("defs");
    const marker = svgEl("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svgEl("path", { d: "M0,0L10,5L0,10z", fill: "#999" }));
    defs.append(marker);
    svg.append(defs);
    if (!nodes.length) {
      svg.setAttribute("viewBox", "0 0 900 100");
      const t = svgEl("text", { x: 450, y: 50, "text-anchor": "middle" });
      t.textContent = "No facts to draw.";
      svg.append(t);
      $("graph-summary").textContent = "No facts to draw.";
      return;
    }
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const d of nodes) {
      x0 = Math.min(x0, d.x); y0 = Math.min(y0, d.y); x1 = Math.max(x1, d.x); y1 = Math.max(y1, d.y);
    }
    const m = 90;
    svg.setAttribute("viewBox", [x0 - m, y0 - m, x1 - x0 + 2 * m, y1 - y0 + 2 * m].join(" "));
    const edgeLayer = svgEl("g", { class: "edges" });
    const nodeLayer = svgEl("g", { class: "nodes" });
    for (const e of state.edges) {
      const a = state.nodes.get(e.source), b = state.nodes.get(e.target);
      const ex = b.x - a.x, ey = b.y - a.y;
      const len = Math.sqrt(ex * ex + ey * ey) || 1;
      const g = svgEl("g", { class: "edge", "data-relation": e.relation, "data-source": e.source, "data-target": e.target });
      g.append(svgEl("line", { x1: a.x + (ex / len) * 13, y1: a.y + (ey / len) * 13, x2: b.x - (ex / len) * 13, y2: b.y - (ey / len) * 13, "marker-end": "url(#arrow)" }));
      const label = svgEl("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 4 });
      label.textContent = short(e.relation, 40);
      g.append(label);
      edgeLayer.append(g);
    }
    for (const d of nodes) {
      const g = svgEl("g", { class: "node" + (state.expanded.has(d.id) ? " expanded" : ""), tabindex: 0, role: "button", "data-id": d.id });
      g.setAttribute("aria-label", d.name + (d.variables.length ? " (pattern node " + d.variables.join(", ") + ")" : "") + ": expand its neighbours");
      if (d.variables.length) g.append(svgEl("circle", { class: "ring", cx: d.x, cy: d.y, r: 17 }));
      g.append(svgEl("circle", { class: "dot " + groupClass(d.groups), cx: d.x, cy: d.y, r: 11 }));
      const label = svgEl("text", { x: d.x, y: d.y + 27 });
      label.textContent = short(d.name, 40) + (d.variables.length ? " (" + d.variables.join(", ") + ")" : "");
      g.append(label);
      g.addEventListener("mouseenter", (ev) => showTip(d, ev));
      g.addEventListener("mouseleave", hideTip);
      g.addEventListener("focus", () => showTip(d));
      g.addEventListener("blur", hideTip);
      g.addEventListener("click", () => expand(d.id));
      g.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); expand(d.id); }
      });
      nodeLayer.append(g);
    }
    svg.append(edgeLayer, nodeLayer);
    $("graph-summary").textContent = nodes.length + " entities, " + state.edges.length +
      " relationships; dashed rings: pattern nodes; click or press Enter on an entity to expand it.";
  }

  function short(text, limit) {
    text = String(text);
    return text.length <= limit ? text : text.slice(0, limit - 1) + "…";
  }

  function describe(d) {
    const list = el("dl");
    const add = (k, v) => { list.append(el("dt", {}, k), el("dd", {}, v)); };
    add("name", d.name);
    add("id", d.id);
    if (d.labels && d.labels.length) add("labels", d.labels.join(", "));
    if (d.variables.length) add("pattern node", d.variables.join(", "));
    if (d.groups.length) add("groups", d.groups.join(", "));
    for (const [k, v] of Object.entries(d.properties || {})) {
      if (k !== "id" && k !== "name") add(k, typeof v === "string" ? v : JSON.stringify(v));
    }
    if (!d.properties) add("properties", "loading…");
    return list;
  }

  function showTip(d, ev) {
    const tip = $("tooltip");
    tip.replaceChildren(describe(d));
    tip.hidden = false;
    tip.dataset.id = d.id;
    if (!d.properties && !d.loading) {  // its properties, once, from the read-only endpoint
      d.loading = true;
      api("POST", "/explore", { id: d.id, limit: 1 }).then((found) => {
        d.properties = found.node.properties;
        d.labels = found.node.labels;
        if (!tip.hidden && tip.dataset.id === d.id) tip.replaceChildren(describe(d));
      }).catch(() => { d.properties = {}; });
    }
    const box = $("graph-view").getBoundingClientRect();
    const x = ev ? ev.clientX - box.left : box.width / 2;
    const y = ev ? ev.clientY - box.top : 10;
    tip.style.left = Math.min(x + 12, box.width - 200) + "px";
    tip.style.top = (y + 12) + "px";
  }

  function hideTip() { $("tooltip").hidden = true; }

  async function expand(id) {
    try {
      const found = await api("POST", "/explore", { id, limit: EXPAND_LIMIT });
      const center = nodeFor(id, found.node.name);
      center.properties = found.node.properties;
      center.labels = found.node.labels;
      let added = 0;
      for (const m of found.neighbours) {
        const isNew = !state.nodes.has(m.id);
        const n = nodeFor(m.id, m.name);
        n.properties = m.properties;
        n.labels = m.labels;
        if (isNew) { n.x = undefined; added += 1; }
        if (m.outgoing) addEdge(id, m.id, m.relation, 0, null);
        else addEdge(m.id, id, m.relation, 0, null);
      }
      state.expanded.add(id);
      layout(30, center);
      draw();
      const panel = $("node-panel");
      const heading = el("h3", {}, center.name);
      const note = found.capped
        ? el("p", { class: "capped" }, "Showing the first " + found.limit + " neighbours: this entity has more (capped).")
        : el("p", {}, found.neighbours.length + " neighbours (" + added + " new).");
      panel.replaceChildren(heading, describe(center), note);
      const again = document.querySelector('#graph-svg .node[data-id="' + CSS.escape(id) + '"]');
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
    const facts = $("facts-table").tBodies[0];
    facts.replaceChildren(...(evidence.facts || []).map((f) => el("tr", {},
      el("td", {}, f.group || ""), el("td", {}, f.head), el("td", {}, f.relation),
      el("td", {}, f.tail), el("td", {}, score(f.score)))));
    showPassages(evidence, {});
    if ((evidence.passages || []).length) {
      api("POST", "/mentions", { chunks: evidence.passages.map((p) => p.id) })
        .then((found) => { if (state.evidence === evidence) showPassages(evidence, found.mentions); })
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
    $("passages").replaceChildren(...(evidence.passages || []).map((p) => el("div", { class: "passage" },
      el("p", { class: "hint" }, p.document + (p.score === null ? "" : "  (" + score(p.score) + ")")),
      highlighted(p.text, [...new Set(names.concat(mentions[p.id] || []))].filter((n) => n && n.length >= 2)))));
    if (!(evidence.passages || []).length) $("passages").replaceChildren(el("p", { class: "hint" }, "No passages."));
  }

  // The passage's text with each mention of an entity of the evidence in a <mark>.
  function highlighted(text, names) {
    const lower = text.toLowerCase();
    const spans = [];
    for (const name of names) {
      const needle = name.toLowerCase();
      let at = lower.indexOf(needle);
      while (at >= 0) {
        spans.push([at, at + needle.length]);
        at = lower.indexOf(needle, at + needle.length);
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
    $("graph").addEventListener("change", async () => { state.graph = $("graph").value; await loadRulesets(); });
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
