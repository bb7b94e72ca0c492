// kgdb's UDF library for FalkorDB (GRAPH.UDF LOAD kgdb ...), installed by
// `kgdb procedures install`. Functions only: FalkorDB UDFs cannot write, have no network or
// file access, and are stopped after about 3 s. No vector maths here (60x slower in JS than
// FalkorDB's vec.*): distances come in as arguments, computed by Cypher and the vector indexes.
// Every function mirrors a Python/Cypher computation of kgdb and is proved equal to it by
// tests/live/test_udf.py.

const KGDB_UDF_VERSION = "kgdb-udf/1";
const MAX_ITEMS = 100000;

// Code-point order (what Python and FalkorDB's ORDER BY use), not UTF-16 unit order.
function compareText(a, b) {
  const x = Array.from(String(a));
  const y = Array.from(String(b));
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return x.length === y.length ? 0 : (x.length < y.length ? -1 : 1);
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
  return KGDB_UDF_VERSION;
}

// Candidates ranked as kgdb ranks them (ORDER BY distance ASC, id ASC LIMIT k): rows
// {rank, id, distance}; a repeated id keeps its smallest distance.
function topk(ids, distances, k) {
  checkList("ids", ids);
  checkList("distances", distances);
  checkK(k);
  if (ids.length !== distances.length) throw new Error("kgdb: ids and distances differ in length");
  const best = new Map();
  for (let i = 0; i < ids.length; i++) {
    const d = distances[i];
    if (typeof d !== "number" || Number.isNaN(d)) throw new Error("kgdb: distances must be numbers");
    const id = String(ids[i]);
    if (!best.has(id) || d < best.get(id)) best.set(id, d);
  }
  const rows = Array.from(best, ([id, distance]) => ({ id, distance }));
  rows.sort((a, b) => (a.distance - b.distance) || compareText(a.id, b.id));
  return rows.slice(0, k).map((row, i) => ({ rank: i + 1, id: row.id, distance: row.distance }));
}

// Reciprocal rank fusion of rankings (kgdb's hybrid document mode: each list adds
// 1 / (c + position + 1) to an id; higher first, ties by id): rows {rank, id, score}.
function rrf(rankings, c, k) {
  checkList("rankings", rankings);
  checkK(k);
  if (typeof c !== "number" || !(c >= 0)) throw new Error("kgdb: c must be a number >= 0");
  const scores = new Map();
  for (const ranking of rankings) {
    checkList("a ranking", ranking);
    ranking.forEach((value, i) => {
      const id = String(value);
      scores.set(id, (scores.get(id) || 0) + 1 / (c + i + 1));
    });
  }
  const rows = Array.from(scores, ([id, score]) => ({ id, score }));
  rows.sort((a, b) => (b.score - a.score) || compareText(a.id, b.id));
  return rows.slice(0, k).map((row, i) => ({ rank: i + 1, id: row.id, score: row.score }));
}

falkor.register("version", version);
falkor.register("topk", topk);
falkor.register("rrf", rrf);
