// kgdb's UDF library for FalkorDB (GRAPH.UDF LOAD kgdb ...), installed by
// `kgdb procedures install`. Functions only: FalkorDB UDFs cannot write, have no network or
// file access, and are stopped after about 3 s. No vector maths here (60x slower in JS than
// FalkorDB's vec.*): distances come in as arguments, computed by Cypher and the vector indexes.
// Every function mirrors a Python/Cypher computation of kgdb and is proved equal to it by
// tests/live/test_udf.py.

const KGDB_UDF_VERSION = "kgdb-udf/4";
const MAX_ITEMS = 50000;
const MAX_CHARS = 1000000;
const MAX_EDGES = 4000000;
// Bounds on one call's work, well inside FalkorDB's ~3 s limit for a UDF (measured on a
// busy 2-core machine: 50,000 ids of astral text ~1 s): beyond them a clear error, never an
// interrupted call.

// A string whose UTF-16 order (JavaScript's <) is the code-point order of `text` (what
// Python and FalkorDB's ORDER BY use): units U+E000..U+FFFF move below the surrogates, which
// move to the top. Computed once per id; plain text (no unit >= U+D800) is its own key.
const HIGH_UNITS = /[\uD800-\uFFFF]/g;
function shiftUnit(unit) {
  const u = unit.charCodeAt(0);
  return String.fromCharCode(u >= 0xE000 ? u - 0x800 : u + 0x2000);
}
function textKey(text) {
  return text.replace(HIGH_UNITS, shiftUnit);
}

// Ids are strings or integers, never coerced: 1 and "1" are two ids (1.0 is the integer 1,
// as in Python and Cypher). Integers sort before strings, numerically; strings by code point
// (rows carry `key`, their textKey).
function compareIds(a, b) {
  const sa = typeof a.id === "string";
  const sb = typeof b.id === "string";
  if (sa !== sb) return sa ? 1 : -1;
  const x = sa ? a.key : a.id;
  const y = sb ? b.key : b.id;
  return x < y ? -1 : (x > y ? 1 : 0);
}

// An integer id goes back as a BigInt: FalkorDB replies a JS number as a double with 15
// significant digits, a BigInt as the exact integer.
function idOut(id) {
  return typeof id === "number" ? BigInt(id) : id;
}

function keyOf(id) {
  return typeof id === "string" ? textKey(id) : id;
}

let charsSeen = 0;
function checkId(name, value) {
  if (typeof value === "string") {
    charsSeen += value.length;
    if (charsSeen > MAX_CHARS) throw new Error("kgdb: the ids have more than " + MAX_CHARS + " characters");
    return value;
  }
  if (typeof value === "number" && Number.isSafeInteger(value)) return value;
  throw new Error("kgdb: " + name + " must be strings or integers, not " +
                  (value === null ? "null" : Array.isArray(value) ? "a list" : typeof value));
}

function checkArity(name, args, n, signature) {
  if (args.length !== n) {
    throw new Error("kgdb: " + name + " takes " + n + " arguments (" + signature + "), not " +
                    args.length);
  }
}

function checkList(name, value) {
  if (!Array.isArray(value)) throw new Error("kgdb: " + name + " must be a list");
  if (value.length > MAX_ITEMS) throw new Error("kgdb: " + name + " has more than " + MAX_ITEMS + " items");
}

function checkK(k) {
  if (typeof k !== "number" || !Number.isInteger(k) || k < 0) throw new Error("kgdb: k must be a whole number >= 0");
}

// The library's version: `kgdb procedures status` compares it with the shipped script.
function version() {
  checkArity("version", arguments, 0, "");
  return KGDB_UDF_VERSION;
}

// The k first rows by `compare`: a full sort when k is large, else one pass keeping the k
// best in order (k log k per kept row), so work stays bounded for MAX_ITEMS inputs.
function firstK(rows, k, compare) {
  if (k === 0) return [];
  if (k > 64 || k * 8 >= rows.length) return rows.sort(compare).slice(0, k);
  const kept = [];
  for (const row of rows) {
    if (kept.length === k && compare(row, kept[k - 1]) >= 0) continue;
    let lo = 0;
    let hi = kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compare(kept[mid], row) <= 0) lo = mid + 1; else hi = mid;
    }
    kept.splice(lo, 0, row);
    if (kept.length > k) kept.pop();
  }
  return kept;
}

// Candidates ranked as kgdb ranks them (ORDER BY distance ASC, id ASC LIMIT k): rows
// {rank, id, distance}; a repeated id keeps its smallest distance.
function topk(ids, distances, k) {
  checkArity("topk", arguments, 3, "ids, distances, k");
  checkList("ids", ids);
  checkList("distances", distances);
  checkK(k);
  if (ids.length !== distances.length) throw new Error("kgdb: ids and distances differ in length");
  charsSeen = 0;
  const best = new Map();
  for (let i = 0; i < ids.length; i++) {
    const d = distances[i];
    if (typeof d !== "number" || Number.isNaN(d)) throw new Error("kgdb: distances must be numbers");
    const id = checkId("ids", ids[i]);
    const known = best.get(id);
    if (known === undefined || d < known) best.set(id, d);
  }
  const rows = Array.from(best, ([id, distance]) => ({ id, distance, key: keyOf(id) }));
  const order = (a, b) => (a.distance - b.distance) || compareIds(a, b);
  return firstK(rows, k, order).map((row, i) => ({ rank: i + 1, id: idOut(row.id), distance: row.distance }));
}

// Reciprocal rank fusion of rankings (kgdb's hybrid document mode: each list adds
// 1 / (c + position + 1) to an id; higher first, ties by id): rows {rank, id, score}.
function rrf(rankings, c, k) {
  checkArity("rrf", arguments, 3, "rankings, c, k");
  checkList("rankings", rankings);
  checkK(k);
  if (typeof c !== "number" || !(c >= 0)) throw new Error("kgdb: c must be a number >= 0");
  let total = 0;
  charsSeen = 0;
  const scores = new Map();
  for (const ranking of rankings) {
    checkList("a ranking", ranking);
    total += ranking.length;
    if (total > MAX_ITEMS) throw new Error("kgdb: the rankings have more than " + MAX_ITEMS + " items");
    ranking.forEach((value, i) => {
      const id = checkId("ranking ids", value);
      scores.set(id, (scores.get(id) || 0) + 1 / (c + i + 1));
    });
  }
  const rows = Array.from(scores, ([id, score]) => ({ id, score, key: keyOf(id) }));
  const order = (a, b) => (b.score - a.score) || compareIds(a, b);
  return firstK(rows, k, order).map((row, i) => ({ rank: i + 1, id: idOut(row.id), score: row.score }));
}


falkor.register("version", version);
falkor.register("topk", topk);
falkor.register("rrf", rrf);

// ---------------------------------------------------------------------------------------
// Personalized PageRank (issue 25; kept in its own section). kgdb/retrieve/pagerank.py holds
// the definition and the numpy reference it equals (tests/live/test_ppr.py):
//   r = (1 - d) * s + d * P^T r,  s = the seed weights normalised to sum 1,
//   P[u][v] = w(u, v) / (sum of u's outgoing weights); a dangling node passes nothing on.
// The graph comes as CSR arrays (kgdb/documents/ppr_graph.py: csr): `nodes` (ascending ids),
// `offsets` (n + 1), `adj` (neighbour positions) and `prob` (P[u][v] per entry).
// Forward push (Andersen, Chung, Lang 2006) in first-in first-out order (rounds, like a
// power iteration over the nodes that still hold residual): every node's residual above
// epsilon times its degree (at least 1) is settled, (1 - d) of it kept as score and d of it
// spread along its edges; what is left unsettled is at most that per node. Rows {node, score,
// pagerank} of the `targets` (null: every node) with a positive score, best first, ties by
// node ascending, at most k. `score` is the PageRank, or, when `boostNodes` is not empty,
// the PageRank divided by the best target's plus the node's entry of `boostValues` (the
// solver's fused ranking, kgdb/retrieve/ppr.py; boosted targets are rows even at PageRank 0).
// The graph checked once and kept as typed arrays (what kgdb.pprStored caches).
function pprGraph(nodes, offsets, adj, prob) {
  if (!Array.isArray(nodes) || !Array.isArray(offsets) || !Array.isArray(adj) || !Array.isArray(prob)) {
    throw new Error("kgdb: nodes, offsets, adj and prob must be lists");
  }
  const n = nodes.length;
  if (offsets.length !== n + 1 || offsets[0] !== 0 || offsets[n] !== adj.length || adj.length !== prob.length) {
    throw new Error("kgdb: offsets, adj and prob do not describe a graph of the nodes");
  }
  const g = { nodes: nodes, offsets: Int32Array.from(offsets), adj: Int32Array.from(adj),
              prob: Float64Array.from(prob), targets: null };
  return indexed(g);
}

// Checks the positions and maps each node id to its position (g.index; a stored projection's
// free slots, id -1, are left out).
function indexed(g) {
  const n = g.nodes.length, adj = g.adj;
  for (let e = 0; e < adj.length; e++) {
    if (!(adj[e] >= 0 && adj[e] < n)) throw new Error("kgdb: adj holds a position outside the nodes");
  }
  g.index = new Map();
  for (let i = 0; i < n; i++) if (g.nodes[i] !== -1) g.index.set(g.nodes[i], i);
  return g;
}

function position(g, id) {
  const at = g.index.get(id);
  return at === undefined ? -1 : at;
}

function pprRun(g, seeds, seedWeights, damping, epsilon, targets, k, boostNodes, boostValues) {
  const nodes = g.nodes, offsets = g.offsets, adj = g.adj, prob = g.prob;
  checkList("seeds", seeds);
  checkList("seedWeights", seedWeights);
  checkK(k);
  const n = nodes.length;
  if (seeds.length !== seedWeights.length) throw new Error("kgdb: seeds and seedWeights differ in length");
  if (typeof damping !== "number" || !(damping >= 0 && damping < 1)) throw new Error("kgdb: damping must be in [0, 1)");
  if (typeof epsilon !== "number" || !(epsilon > 0)) throw new Error("kgdb: epsilon must be a number > 0");
  if (targets !== null && !Array.isArray(targets)) throw new Error("kgdb: targets must be a list");
  checkList("boostNodes", boostNodes);
  checkList("boostValues", boostValues);
  if (boostNodes.length !== boostValues.length) throw new Error("kgdb: boostNodes and boostValues differ in length");
  const boost = new Map();
  for (let i = 0; i < boostNodes.length; i++) {
    const b = boostValues[i];
    if (typeof b !== "number" || !Number.isFinite(b)) throw new Error("kgdb: boostValues must be numbers");
    boost.set(boostNodes[i], (boost.get(boostNodes[i]) || 0) + b);
  }
  const score = new Float64Array(n);
  const residual = new Float64Array(n);
  const queued = new Uint8Array(n);
  const queue = [];
  let total = 0;
  for (const w of seedWeights) {
    if (typeof w !== "number" || !(w >= 0) || !Number.isFinite(w)) throw new Error("kgdb: seedWeights must be non-negative numbers");
    total += w;
  }
  for (let i = 0; i < seeds.length; i++) {
    const at = position(g, seeds[i]);
    if (at < 0) throw new Error("kgdb: seed " + seeds[i] + " is not a node of the graph");
    if (total > 0) residual[at] += seedWeights[i] / total;
  }
  const limit = (i) => epsilon * Math.max(1, offsets[i + 1] - offsets[i]);
  // Only the seeds and the nodes a push reached are visited, never all n: on the 10x corpus
  // (50k nodes, 20k chunks) loops over every node and every chunk cost 40-60 ms per question
  // in FalkorDB's JavaScript, the push itself a few.
  const touched = [];
  const start = [];
  for (let i = 0; i < seeds.length; i++) start.push(position(g, seeds[i]));
  start.sort((a, b) => a - b);  // ascending, as a scan of every node would queue them
  for (const at of start) {
    if (queued[at] === 0 && residual[at] > limit(at)) { queue.push(at); queued[at] = 1; }
  }
  let pushes = 0;
  let head = 0;
  while (head < queue.length) {
    const u = queue[head++];
    if (head > 65536 && head * 2 > queue.length) { queue.splice(0, head); head = 0; }
    queued[u] = 0;
    const ru = residual[u];
    if (!(ru > limit(u))) continue;
    residual[u] = 0;
    if (score[u] === 0) touched.push(u);
    score[u] += (1 - damping) * ru;
    const spread = damping * ru;
    const end = offsets[u + 1];
    for (let e = offsets[u]; e < end; e++) {
      const v = adj[e];
      residual[v] += spread * prob[e];
      if (queued[v] === 0 && residual[v] > limit(v)) { queued[v] = 1; queue.push(v); }
    }
    if (++pushes > 50000000) throw new Error("kgdb: ppr did not settle (epsilon too small)");
  }
  const rows = [];
  let top = 0;
  const row = (id, pr) => {
    rows.push({ node: id, score: pr, pagerank: pr });
    if (pr > top) top = pr;
  };
  if (targets === null || g.isTarget !== undefined) {
    // every node, or the stored chunks (marked once per projection): the touched ones
    const isTarget = targets === null ? null : g.isTarget;
    for (const at of touched) if (isTarget === null || isTarget[at] === 1) row(nodes[at], score[at]);
    for (const id of boost.keys()) {  // boosted targets are rows even at PageRank 0
      const at = position(g, id);
      if (at >= 0 && (isTarget === null || isTarget[at] === 1) && score[at] === 0) row(id, 0);
    }
  } else {
    const seen = new Set();
    for (const id of targets) {
      if (seen.has(id)) continue;
      seen.add(id);
      const at = position(g, id);
      const pr = at >= 0 ? score[at] : 0;
      if (pr > 0 || boost.has(id)) row(id, pr);
    }
  }
  if (boost.size > 0) {
    for (const row of rows) row.score = (top > 0 ? row.pagerank / top : 0) + (boost.get(row.node) || 0);
  }
  rows.sort((x, y) => (y.score - x.score) || (x.node < y.node ? -1 : (x.node > y.node ? 1 : 0)));
  return rows.slice(0, k);
}

function ppr(nodes, offsets, adj, prob, seeds, seedWeights, damping, epsilon, targets, k,
             boostNodes, boostValues) {
  checkList("nodes", nodes);
  checkList("offsets", offsets);
  if (targets !== null) checkList("targets", targets);
  return pprRun(pprGraph(nodes, offsets, adj, prob), seeds, seedWeights, damping, epsilon,
                targets, k, boostNodes, boostValues);
}

// The stored projection (kgdb/documents/ppr_graph.py: "The stored projection"): blocks of
// 64 slots, each {nodes (internal ids, -1 for a free slot), kinds (1 a chunk: the targets),
// offsets, adj (neighbour slots, global), prob}, kept in this JavaScript context by block
// version; a projection (its id on the meta node, a fresh one per write) is the blocks of
// its `versions` in order, concatenated. kgdb.pprKnown(id) says whether a projection is kept
// and kgdb.pprHasBlock(version) whether a block is, so that Cypher passes nulls instead of
// the arrays (passing the 130k items of MuSiQue-100's projection into JavaScript cost 1.7
// ms per question) and, after an incremental update, only the rewritten blocks. A few
// projections are kept (graphs of one server), and the blocks they use.
const PROJECTIONS = new Map();
const BLOCKS = new Map();
function pprKnown(projection) {
  return PROJECTIONS.has(projection);
}

function pprHasBlock(version) {
  return BLOCKS.has(version);
}

function keepBlock(b) {
  if (!Array.isArray(b) || b.length !== 6 || typeof b[0] !== "string") {
    throw new Error("kgdb: a block is [version, nodes, kinds, offsets, adj, prob]");
  }
  const [version, nodes, kinds, offsets, adj, prob] = b;
  for (const [name, list] of [["nodes", nodes], ["kinds", kinds], ["offsets", offsets]]) {
    checkList(name, list);
  }
  // A block's edges are as many as its 64 nodes have (a chunk naming thousands of phrases):
  // bounded by MAX_EDGES, not MAX_ITEMS (typed arrays are filled at ~100 M items/s).
  for (const [name, list] of [["adj", adj], ["prob", prob]]) {
    if (!Array.isArray(list)) throw new Error("kgdb: " + name + " must be a list");
    if (list.length > MAX_EDGES) throw new Error("kgdb: a block's " + name + " has more than " + MAX_EDGES + " items");
  }
  const n = nodes.length;
  if (kinds.length !== n || offsets.length !== n + 1 || offsets[0] !== 0 || offsets[n] !== adj.length ||
      adj.length !== prob.length) {
    throw new Error("kgdb: block " + version + " does not describe its nodes' edges");
  }
  BLOCKS.set(version, { nodes: nodes, kinds: Uint8Array.from(kinds), offsets: Int32Array.from(offsets),
                        adj: Int32Array.from(adj), prob: Float64Array.from(prob) });
}

function assemble(versions) {
  let n = 0, m = 0;
  const parts = versions.map((v) => {
    const b = BLOCKS.get(v);
    if (b === undefined) throw new Error("kgdb: block " + v + " of the projection is not kept here: pass it");
    n += b.nodes.length;
    m += b.adj.length;
    return b;
  });
  const nodes = new Array(n), offsets = new Int32Array(n + 1), adj = new Int32Array(m);
  const prob = new Float64Array(m), isTarget = new Uint8Array(n);
  let i = 0, e = 0;
  for (const b of parts) {
    for (let j = 0; j < b.nodes.length; j++, i++) {
      nodes[i] = b.nodes[j];
      isTarget[i] = b.kinds[j] === 1 ? 1 : 0;
      offsets[i] = e + b.offsets[j];
    }
    adj.set(b.adj, e);
    prob.set(b.prob, e);
    e += b.adj.length;
  }
  offsets[n] = e;
  return indexed({ nodes: nodes, offsets: offsets, adj: adj, prob: prob, targets: [], isTarget: isTarget });
}

function pprStored(projection, versions, fresh, seeds, seedWeights, damping, epsilon, k,
                   boostNodes, boostValues) {
  if (typeof projection !== "string") throw new Error("kgdb: the projection id must be a string");
  let g = PROJECTIONS.get(projection);
  if (versions !== null) {
    checkList("versions", versions);
    checkList("fresh", fresh);
    for (const b of fresh) keepBlock(b);
    g = assemble(versions);
    g.versions = versions;
    if (PROJECTIONS.size >= 4) PROJECTIONS.delete(PROJECTIONS.keys().next().value);
    PROJECTIONS.set(projection, g);
    const used = new Set();
    for (const p of PROJECTIONS.values()) for (const v of p.versions) used.add(v);
    for (const v of Array.from(BLOCKS.keys())) if (!used.has(v)) BLOCKS.delete(v);
  } else if (g === undefined) {
    throw new Error("kgdb: projection " + projection + " is not kept here: pass its blocks");
  }
  return pprRun(g, seeds, seedWeights, damping, epsilon, g.targets, k, boostNodes, boostValues);
}

falkor.register("ppr", ppr);
falkor.register("pprKnown", pprKnown);
falkor.register("pprHasBlock", pprHasBlock);
falkor.register("pprStored", pprStored);
// ---- end of the personalized PageRank section ----------------------------------------
