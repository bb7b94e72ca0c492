#!/usr/bin/env node
// Offline Neo4j Cypher linter harness for the kgdb test-suite.
//
// Usage:
//   node tests/neo4j_lint/lint.mjs < queries.json > diagnostics.json
//     stdin : a JSON array of Cypher query strings
//     stdout: a JSON array (same order, same length) whose items are lists of
//             diagnostics {severity, message, line, column}
//             severity: "error" | "warning" | "information" | "hint"
//             line / column: 1-based (like Neo4j's own error messages)
//   node tests/neo4j_lint/lint.mjs --print-bundled-signatures > neo4j5_signatures.json
//     regenerates neo4j5_signatures.json from the signature list bundled in the
//     pinned @neo4j-cypher/language-support package (see below).
//
// It uses Neo4j's official front-end package @neo4j-cypher/language-support
// (function lintCypherQuery), pinned to 2.0.0-next.20: the newest release whose
// `engines` accepts Node 18/20 (next.26 needs Node >= 22.15, next.36+ >= 24.11);
// its parser / semantic analysis are Neo4j 2025.02's. That CYPHER 5 is a
// superset of 5.26's (2025.01/.02 added a few Cypher 5 features), so a clean
// lint is necessary, not sufficient, for a query to run on Neo4j 5.26. That package runs the real Neo4j parser and
// semantic analysis (Neo4j's Java front-end compiled to JS) plus checks of
// procedure / function names against a DbSchema. All queries are linted in this
// one process: start-up + warm-up is ~1 s, then each distinct query costs
// ~30-60 ms on this machine (almost all of it in the semantic analysis);
// repeated identical queries are linted once.
//
// Cypher language version
// -----------------------
// Neo4j 5.26 speaks CYPHER 5 only. In this package (2.0.0-next.20):
//   * the semantic analysis uses, per statement, the version given by an
//     explicit `CYPHER <version>` prefix, else `dbSchema.defaultLanguage`, else
//     'CYPHER 5' (syntaxValidation/semanticAnalysisWrapper.ts);
//   * procedure / function look-ups use `dbSchema.procedures[version]` and
//     `dbSchema.functions[version]`, where version is always 'CYPHER 5' while the
//     package's internal feature flag `_internalFeatureFlags.cypher25` is off
//     (it is off by default; helpers.ts resolveCypherVersion).
// We set `defaultLanguage: 'CYPHER 5'` explicitly, keep the flag off, and store
// the signatures under the 'CYPHER 5' key. A statement that carries an explicit
// `CYPHER 25` prefix would be analysed as Cypher 25, which Neo4j 5.26 rejects, so
// this harness reports it as an error itself (message starts with "[harness]").
//
// DbSchema choices (see neo4j5_signatures.json)
// ---------------------------------------------
//   * `labels` / `relationshipTypes` are left unset: the package only warns about
//     unknown labels / relationship types when BOTH lists are given, and kgdb
//     creates labels dynamically. Property keys are never checked.
//   * `parameters`: the package reports "Parameter $x is not defined" for every
//     parameter missing from dbSchema.parameters (a Neo4j Browser `:param`
//     feature; a server receives the parameters with the query). We declare
//     every parameter name with a Proxy so that check never fires.
//   * `procedures` / `functions`: Neo4j's own list bundled in the package
//     (testData.mockSchema, dumped from a real Neo4j server), minus the apoc.*
//     and gds.* plugins that a plain Neo4j 5.26 does not ship. Unknown
//     procedures / functions are errors; wrong argument counts / unknown YIELD
//     columns are errors from the semantic analysis.
//
// Every diagnostic is reported (errors, warnings such as the deprecation of
// `CALL { WITH x ... }` importing subqueries or of id(), ...); the Python
// wrapper and the tests treat any diagnostic as a failure.
//
// Safety net: the package swallows exceptions thrown by its semantic analysis
// (returning no diagnostics at all). To make sure a broken install can never
// make everything look clean, a few canary queries with known diagnostics are
// linted first; if any canary comes back clean this script exits with code 3.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const SIGNATURES_PATH = join(here, 'neo4j5_signatures.json');
const CYPHER_VERSION = 'CYPHER 5';
const EXCLUDED_PREFIXES = ['apoc.', 'gds.'];

// The package's ESM build uses extension-less relative imports that Node's ESM
// loader cannot resolve, so load its CommonJS bundle instead.
const require = createRequire(import.meta.url);

function loadPackage() {
  try {
    return require('@neo4j-cypher/language-support');
  } catch (err) {
    process.stderr.write(
      `cannot load @neo4j-cypher/language-support (${err.message}); ` +
        'run `npm ci --prefix tests/neo4j_lint`\n',
    );
    process.exit(2);
  }
}

const SEVERITY = { 1: 'error', 2: 'warning', 3: 'information', 4: 'hint' };

function sortedObject(obj) {
  return Object.fromEntries(
    Object.keys(obj)
      .sort()
      .map((k) => [k, obj[k]]),
  );
}

function printBundledSignatures(pkg) {
  const pkgJson = JSON.parse(
    readFileSync(
      join(here, 'node_modules', '@neo4j-cypher', 'language-support', 'package.json'),
      'utf8',
    ),
  );
  const mock = pkg.testData.mockSchema;
  const keep = (registry) =>
    sortedObject(
      Object.fromEntries(
        Object.entries(registry).filter(
          ([name]) => !EXCLUDED_PREFIXES.some((p) => name.startsWith(p)),
        ),
      ),
    );
  const out = {
    _source:
      `Extracted verbatim from ${pkgJson.name}@${pkgJson.version} ` +
      '(testData.mockSchema: Neo4j\'s own list of a real server\'s procedures and ' +
      'functions, in the shape of SHOW PROCEDURES / SHOW FUNCTIONS YIELD *) ' +
      'by `node tests/neo4j_lint/lint.mjs --print-bundled-signatures`.',
    _excluded_prefixes: EXCLUDED_PREFIXES,
    _notes:
      'labels / relationshipTypes are deliberately absent (no unknown-label warnings); ' +
      'lint.mjs declares every query parameter itself.',
    _handwritten: [],
    defaultLanguage: CYPHER_VERSION,
    procedures: { [CYPHER_VERSION]: keep(mock.procedures[CYPHER_VERSION]) },
    functions: { [CYPHER_VERSION]: keep(mock.functions[CYPHER_VERSION]) },
  };
  process.stdout.write(JSON.stringify(out, null, 1) + '\n');
}

function buildDbSchema() {
  const sig = JSON.parse(readFileSync(SIGNATURES_PATH, 'utf8'));
  return {
    defaultLanguage: CYPHER_VERSION,
    procedures: { [CYPHER_VERSION]: sig.procedures[CYPHER_VERSION] },
    functions: { [CYPHER_VERSION]: sig.functions[CYPHER_VERSION] },
    // Every parameter name is "declared" (value null !== undefined).
    parameters: new Proxy(
      {},
      { get: (_t, key) => (typeof key === 'string' ? null : undefined) },
    ),
    // labels / relationshipTypes / propertyKeys intentionally unset.
  };
}

function lintOne(pkg, dbSchema, query) {
  if (typeof query !== 'string') {
    return [
      { severity: 'error', message: '[harness] query is not a string', line: 1, column: 1 },
    ];
  }
  let raw;
  try {
    raw = pkg.lintCypherQuery(query, dbSchema);
  } catch (err) {
    return [
      {
        severity: 'error',
        message: `[harness] lintCypherQuery threw: ${err && err.stack ? err.stack : err}`,
        line: 1,
        column: 1,
      },
    ];
  }
  const out = raw.map((d) => ({
    severity: SEVERITY[d.severity] ?? String(d.severity),
    message: d.message,
    line: d.range.start.line + 1,
    column: d.range.start.character + 1,
  }));
  // Explicit `CYPHER 25` (or any non-5) prefix: not valid on Neo4j 5.26.
  // (parse() is cached by the package, so this costs nothing extra.)
  const parsed = pkg.parserWrapper.parse(query);
  for (const st of parsed.statementsParsing) {
    if (st.cypherVersion !== undefined && st.cypherVersion !== CYPHER_VERSION) {
      out.push({
        severity: 'error',
        message: `[harness] explicit '${st.cypherVersion}' prefix: Neo4j 5.26 only supports ${CYPHER_VERSION}`,
        line: st.command.start.line,
        column: st.command.start.column + 1,
      });
    }
  }
  return out;
}

// Queries whose diagnostics prove the parser, the semantic analysis and the
// procedure/function registry are all alive.
const CANARIES = [
  ['MATCH (n RETURN n', 'Invalid input'],
  ['MATCH (n) RETURN m', 'Variable `m` not defined'],
  ['CALL db.index.vector.queryNodes($i, $k)', 'required number of arguments'],
  ['CALL db.index.vector.nope(1)', 'db.index.vector.nope is not present'],
  ['RETURN nope(1)', 'Function nope is not present'],
];

function checkCanaries(pkg, dbSchema) {
  for (const [query, expected] of CANARIES) {
    const diags = lintOne(pkg, dbSchema, query);
    if (!diags.some((d) => d.message.includes(expected))) {
      process.stderr.write(
        `linter self-check failed: ${JSON.stringify(query)} should report ` +
          `${JSON.stringify(expected)}, got ${JSON.stringify(diags)}\n`,
      );
      process.exit(3);
    }
  }
}

function main() {
  const pkg = loadPackage();
  if (process.argv.includes('--print-bundled-signatures')) {
    printBundledSignatures(pkg);
    return;
  }
  let queries;
  try {
    queries = JSON.parse(readFileSync(0, 'utf8'));
  } catch (err) {
    process.stderr.write(`stdin is not valid JSON: ${err.message}\n`);
    process.exit(2);
  }
  if (!Array.isArray(queries)) {
    process.stderr.write('stdin must be a JSON array of query strings\n');
    process.exit(2);
  }
  const dbSchema = buildDbSchema();
  checkCanaries(pkg, dbSchema);
  // Identical statements (kgdb repeats many) are linted once.
  const seen = new Map();
  const results = queries.map((q) => {
    if (typeof q === 'string' && seen.has(q)) return seen.get(q);
    const diags = lintOne(pkg, dbSchema, q);
    if (typeof q === 'string') seen.set(q, diags);
    return diags;
  });
  process.stdout.write(JSON.stringify(results) + '\n');
}

main();
