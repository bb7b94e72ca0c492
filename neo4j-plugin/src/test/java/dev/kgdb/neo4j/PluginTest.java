package dev.kgdb.neo4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.QueryExecutionException;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

/** The plugin on a real in-process Neo4j (neo4j-harness): each function and procedure against
 * brute force computed here or by plain Cypher, and hostile arguments. */
class PluginTest {
    static Neo4j neo4j;
    static GraphDatabaseService db;
    static final int DIM = 8;
    static final String[] TYPES = {"acted_in", "directed_by", "has_genre"};

    @BeforeAll
    static void start() {
        neo4j = Neo4jBuilders.newInProcessBuilder().withDisabledServer()
                .withFunction(Functions.class).withProcedure(Nearest.class)
                .withProcedure(SimGrag.class).withProcedure(SimGragSearch.class).withProcedure(Entities.class).build();
        db = neo4j.defaultDatabaseService();
        Random random = new Random(7);
        List<Map<String, Object>> nodes = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            List<Double> v = new ArrayList<>();
            for (int d = 0; d < DIM; d++) v.add(random.nextGaussian());
            nodes.add(Map.of("id", String.format("e%02d", i), "name", "entity " + i, "embedding", v));
        }
        List<Map<String, Object>> rels = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            rels.add(Map.of("a", String.format("e%02d", random.nextInt(60)),
                    "b", String.format("e%02d", random.nextInt(60)), "t", TYPES[random.nextInt(3)]));
        }
        db.executeTransactionally("CREATE CONSTRAINT ent_id IF NOT EXISTS FOR (n:Entity) REQUIRE n.id IS UNIQUE");
        db.executeTransactionally("CREATE VECTOR INDEX kgdb_entity_embedding_vector IF NOT EXISTS FOR (n:Entity) ON (n.embedding) "
                + "OPTIONS {indexConfig: {`vector.dimensions`: 8, `vector.similarity_function`: 'euclidean', "
                + "`vector.quantization.enabled`: false}}");
        db.executeTransactionally("UNWIND $nodes AS n CREATE (e:Entity) SET e = n", Map.of("nodes", nodes));
        for (String t : TYPES) {  // plain Cypher cannot parameterise a type: one statement per type
            db.executeTransactionally("UNWIND $rels AS r WITH r WHERE r.t = $t "
                    + "MATCH (a:Entity {id: r.a}), (b:Entity {id: r.b}) CREATE (a)-[:`" + t + "`]->(b)",
                    Map.of("rels", rels, "t", t));
        }
        db.executeTransactionally("CREATE FULLTEXT INDEX kgdb_entity_text_fulltext IF NOT EXISTS "
                + "FOR (n:Entity) ON EACH [n.name]");
        db.executeTransactionally("CALL db.awaitIndexes(300)");
    }

    @AfterAll
    static void stop() {
        neo4j.close();
    }

    static List<Map<String, Object>> rows(String cypher, Map<String, Object> params) {
        return db.executeTransactionally(cypher, params, r -> {
            List<Map<String, Object>> out = new ArrayList<>();
            r.forEachRemaining(out::add);
            return out;
        });
    }

    static Object one(String cypher, Map<String, Object> params) {
        return rows(cypher, params).get(0).values().iterator().next();
    }

    static String failure(String cypher, Map<String, Object> params) {
        QueryExecutionException e = assertThrows(QueryExecutionException.class, () -> rows(cypher, params));
        String message = e.getMessage();
        return message;
    }

    @Test
    void versionIsTheBuiltOne() {
        assertEquals(Functions.VERSION, one("RETURN kgdb.version() AS v", Map.of()));
        assertFalse(Functions.VERSION.contains("$"));
    }

    @Test
    void l2IsBitIdenticalToCypherReduce() {
        Random random = new Random(1);
        for (int trial = 0; trial < 50; trial++) {
            List<Double> a = new ArrayList<>(), b = new ArrayList<>();
            for (int i = 0; i < 384; i++) {
                a.add((double) (float) random.nextGaussian());
                b.add(a.get(i) + (trial % 5 == 0 ? 1e-6 * random.nextGaussian() : random.nextGaussian()));
            }
            Map<String, Object> p = Map.of("a", a, "b", b);
            double exact = (double) one("RETURN sqrt(reduce(acc = 0.0, i IN range(0, size($a) - 1) | "
                    + "acc + ($a[i] - $b[i]) ^ 2)) AS d", p);
            assertEquals(exact, (double) one("RETURN kgdb.l2($a, $b) AS d", p));
            double cos = (double) one("RETURN kgdb.cosine($a, $b) AS c", p);
            double plain = (double) one("RETURN 2.0 * vector.similarity.cosine($a, $b) - 1.0 AS c", p);
            assertEquals(plain, cos, 1e-6);
        }
        assertEquals(0.0, (double) one("RETURN kgdb.l2([1.0, 2.0], [1.0, 2.0]) AS d", Map.of()));
        assertEquals(5.0, (double) one("RETURN kgdb.l2([0, 0], [3, 4]) AS d", Map.of()));
        assertEquals(1.0e-6, (double) one("RETURN kgdb.l2([0.0], [1.0e-6]) AS d", Map.of()), 1e-20);
    }

    @Test
    void distanceFunctionsRejectHostileArguments() {
        assertNull(one("RETURN kgdb.l2(null, [1.0]) AS d", Map.of()));
        assertNull(one("RETURN kgdb.cosine([1.0], null) AS d", Map.of()));
        assertTrue(failure("RETURN kgdb.l2([], []) AS d", Map.of()).contains("kgdb.l2: a is an empty list"));
        assertTrue(failure("RETURN kgdb.l2([1.0, 0.0/0.0], [1.0, 2.0]) AS d", Map.of()).contains("a[1] is NaN"));
        assertTrue(failure("RETURN kgdb.l2([1.0], [1.0, 2.0]) AS d", Map.of()).contains("different sizes (1 and 2)"));
        assertTrue(failure("RETURN kgdb.l2('x', [1.0]) AS d", Map.of()).contains("a is a String"));
        assertTrue(failure("RETURN kgdb.l2([1.0, 'x'], [1.0, 2.0]) AS d", Map.of()).contains("a[1] is String"));
        assertTrue(failure("RETURN kgdb.l2([1.0, null], [1.0, 2.0]) AS d", Map.of()).contains("a[1] is null"));
        assertTrue(failure("RETURN kgdb.cosine([0.0], [1.0]) AS d", Map.of()).contains("zeros"));
    }

    @Test
    void nearestNodesIsTheExactTopK() {
        Random random = new Random(3);
        List<Map<String, Object>> all = rows("MATCH (n:Entity) RETURN n.id AS id, n.embedding AS v", Map.of());
        for (int trial = 0; trial < 20; trial++) {
            List<Double> q = new ArrayList<>();
            for (int d = 0; d < DIM; d++) q.add(random.nextGaussian());
            double[] qv = Vectors.of(q, "q");
            List<Map.Entry<String, Double>> brute = new ArrayList<>();
            for (Map<String, Object> row : all) {
                brute.add(Map.entry((String) row.get("id"), Vectors.l2(Vectors.of(row.get("v"), "v"), qv)));
            }
            brute.sort(Map.Entry.<String, Double>comparingByValue().thenComparing(Map.Entry.comparingByKey()));
            int k = 1 + trial % 7;
            List<Map<String, Object>> got = rows("CALL kgdb.nearestNodes('kgdb_entity_embedding_vector', $q, $k) YIELD node, distance "
                    + "RETURN node.id AS id, distance ORDER BY distance, id LIMIT $k", Map.of("q", q, "k", k));
            assertEquals(k, got.size());
            for (int i = 0; i < k; i++) {
                assertEquals(brute.get(i).getKey(), got.get(i).get("id"));
                assertEquals(brute.get(i).getValue(), (double) got.get(i).get("distance"));
            }
        }
    }

    /** The exact in-memory matrix (VectorMatrix): over several blocks, with duplicate
     * vectors (ties), equal to brute force; and current after every kind of write. */
    @Test
    void nearestNodesFromTheMatrixStayExactAcrossWrites() {
        Random random = new Random(11);
        List<Map<String, Object>> nodes = new ArrayList<>();
        List<Double> twin = null;
        for (int i = 0; i < 2500; i++) {
            List<Double> v = new ArrayList<>();
            for (int d = 0; d < DIM; d++) v.add(random.nextGaussian());
            if (i % 500 == 0) twin = v;
            nodes.add(Map.of("id", String.format("p%04d", i), "embedding", i % 500 == 1 ? twin : v));
        }
        db.executeTransactionally("CREATE VECTOR INDEX probe_vec IF NOT EXISTS FOR (n:Probe) ON (n.embedding) "
                + "OPTIONS {indexConfig: {`vector.dimensions`: 8, `vector.similarity_function`: 'euclidean'}}");
        db.executeTransactionally("UNWIND $nodes AS n CREATE (e:Probe) SET e = n", Map.of("nodes", nodes));
        db.executeTransactionally("CALL db.awaitIndexes(300)");
        String call = "CALL kgdb.nearestNodes('probe_vec', $q, $k) YIELD node, distance "
                + "RETURN node.id AS id, distance ORDER BY distance, id LIMIT $k";
        for (int trial = 0; trial < 40; trial++) {
            List<Double> q = new ArrayList<>();
            for (int d = 0; d < DIM; d++) q.add(random.nextGaussian() * (trial % 2 == 0 ? 1 : 0.01));
            if (trial % 5 == 0) q = (List<Double>) nodes.get(500 * (trial % 5)).get("embedding");
            assertNearestIsBruteForce(call, q, 1 + trial % 20);
        }
        Map<String, Object> state = rows("CALL kgdb.vectorIndexes() YIELD index, state, rows "
                + "WHERE index = 'probe_vec' RETURN state, rows", Map.of()).get(0);
        assertEquals("current", state.get("state"));
        assertEquals(2500L, state.get("rows"));
        // random doubles: the copy's floats round them, so exact distances come from the store
        assertTrue(VectorMatrix.cached(db, "probe_vec").lastFromStore > 0);
        // an update, a deletion, a new node and a removed label: each seen by the next search
        List<Double> q = List.of(9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0);
        db.executeTransactionally("MATCH (n:Probe {id: 'p0007'}) SET n.embedding = $q", Map.of("q", q));
        assertEquals("p0007", rows(call, Map.of("q", q, "k", 1)).get(0).get("id"));
        db.executeTransactionally("MATCH (n:Probe {id: 'p0007'}) DETACH DELETE n");
        db.executeTransactionally("CREATE (:Probe {id: 'p9999', embedding: $q})", Map.of("q", q));
        assertEquals("p9999", rows(call, Map.of("q", q, "k", 1)).get(0).get("id"));
        db.executeTransactionally("MATCH (n:Probe {id: 'p9999'}) REMOVE n:Probe");
        assertNearestIsBruteForce(call, q, 5);
        db.executeTransactionally("MATCH (n:Probe) DETACH DELETE n");
        db.executeTransactionally("DROP INDEX probe_vec");
    }

    /** The lower-bound screen (principal axes + residual norm) on 64 dimensions of mostly
     * low-rank data, as embeddings are: over several blocks, with many exact duplicates (ties
     * at the k-th), queries on rows, near rows and far away, and after updates: equal to brute
     * force, and the screen rules out most rows (it is not a full scan in disguise). */
    @Test
    void lowerBoundScreenIsExactOnCorrelatedVectors() {
        screenIsExactOnCorrelatedVectors(VectorMatrix.twoStageRows);  // one stage at 3,000 rows
    }

    /** The same with the two-stage screen (first half of the axes, then the rest). */
    @Test
    void twoStageScreenIsExactOnCorrelatedVectors() {
        int kept = VectorMatrix.twoStageRows;
        VectorMatrix.twoStageRows = 0;
        try {
            screenIsExactOnCorrelatedVectors(0);
        } finally {
            VectorMatrix.twoStageRows = kept;
        }
    }

    @SuppressWarnings("unchecked")
    private void screenIsExactOnCorrelatedVectors(int twoStageRows) {
        int dim = 64, n = 3000;
        Random random = new Random(23);
        double[][] basis = new double[6][dim];
        for (double[] b : basis) {
            for (int d = 0; d < dim; d++) b[d] = random.nextGaussian();
        }
        List<Map<String, Object>> nodes = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            List<Double> v;
            if (i % 100 == 1 || i % 100 == 2) {
                v = (List<Double>) nodes.get(i - i % 100).get("embedding");  // tied duplicates
            } else {
                v = new ArrayList<>();
                double[] w = new double[6];
                for (int c = 0; c < 6; c++) w[c] = random.nextGaussian() * (6 - c);
                for (int d = 0; d < dim; d++) {
                    double x = 0.05 * random.nextGaussian();
                    for (int c = 0; c < 6; c++) x += w[c] * basis[c][d];
                    v.add((double) (float) x);
                }
            }
            nodes.add(Map.of("id", String.format("p%04d", i), "embedding", v));
        }
        db.executeTransactionally("CREATE VECTOR INDEX probe_vec IF NOT EXISTS FOR (n:Probe) ON (n.embedding) "
                + "OPTIONS {indexConfig: {`vector.dimensions`: 64, `vector.similarity_function`: 'euclidean'}}");
        db.executeTransactionally("UNWIND $nodes AS n CREATE (e:Probe) SET e = n", Map.of("nodes", nodes));
        db.executeTransactionally("CALL db.awaitIndexes(300)");
        String call = "CALL kgdb.nearestNodes('probe_vec', $q, $k) YIELD node, distance "
                + "RETURN node.id AS id, distance ORDER BY distance, id LIMIT $k";
        long visited = 0;
        for (int trial = 0; trial < 40; trial++) {
            List<Double> row = (List<Double>) nodes.get(random.nextInt(n)).get("embedding");
            List<Double> q = new ArrayList<>();
            for (int d = 0; d < dim; d++) {
                double noise = trial % 4 == 0 ? 0 : trial % 4 == 1 ? 0.01 : trial % 4 == 2 ? 1.0 : 30.0;
                q.add(row.get(d) + noise * random.nextGaussian());
            }
            assertNearestIsBruteForce(call, q, 1 + trial % 25);
            Map<String, Object> last = rows("CALL kgdb.vectorIndexes() YIELD index, lastCandidates, "
                    + "lastScreened WHERE index = 'probe_vec' RETURN lastCandidates, lastScreened", Map.of()).get(0);
            long candidates = (long) last.get("lastCandidates");
            visited += candidates;
            // every row visited after the first k went through the second stage's bound
            assertTrue(candidates - (1 + trial % 25) <= (long) last.get("lastScreened"), last.toString());
        }
        // float-valued vectors (as kgdb stores MiniLM's): exact distances from the copy alone
        assertEquals(0, VectorMatrix.cached(db, "probe_vec").lastFromStore);
        // the searches ran on the in-memory copy (each visits at least k rows), not the index
        assertTrue(visited >= 40 && visited < 40L * n / 4, "the screen visited " + visited + " rows in 40 searches");
        assertEquals(32L, one("CALL kgdb.vectorIndexes() YIELD index, screenDims WHERE index = 'probe_vec' "
                + "RETURN screenDims", Map.of()));
        assertEquals(n >= twoStageRows ? 16 : 32, VectorMatrix.cached(db, "probe_vec").firstDims);
        // updates: a moved row, a deleted one and a new one, each seen by the next search
        List<Double> far = new ArrayList<>();
        for (int d = 0; d < dim; d++) far.add(50.0);
        db.executeTransactionally("MATCH (n:Probe {id: 'p0042'}) SET n.embedding = $q", Map.of("q", far));
        assertEquals("p0042", rows(call, Map.of("q", far, "k", 1)).get(0).get("id"));
        db.executeTransactionally("MATCH (n:Probe {id: 'p0042'}) DETACH DELETE n");
        db.executeTransactionally("CREATE (:Probe {id: 'p9999', embedding: $q})", Map.of("q", far));
        assertNearestIsBruteForce(call, far, 3);
        db.executeTransactionally("MATCH (n:Probe) DETACH DELETE n");
        db.executeTransactionally("DROP INDEX probe_vec");
    }

    /** Writes are patched into the copy, not rebuilt: after each of 30 random writes
     * (vectors moved, nodes deleted, created, relabelled, given an invalid vector, several in
     * one transaction, a rolled-back one) the next searches equal brute force and the copy was
     * patched; a write touching more than a quarter of the rows rebuilds it. */
    @Test
    @SuppressWarnings("unchecked")
    void writesArePatchedIntoTheCopyAndStayExact() {
        int dim = 16, n = 3000;
        Random random = new Random(5);
        List<Map<String, Object>> nodes = new ArrayList<>();
        for (int i = 0; i < n; i++) nodes.add(Map.of("id", String.format("p%04d", i), "embedding", vector(random, dim)));
        db.executeTransactionally("CREATE VECTOR INDEX probe_vec IF NOT EXISTS FOR (n:Probe) ON (n.embedding) "
                + "OPTIONS {indexConfig: {`vector.dimensions`: 16, `vector.similarity_function`: 'euclidean'}}");
        db.executeTransactionally("UNWIND $nodes AS n CREATE (e:Probe) SET e = n", Map.of("nodes", nodes));
        db.executeTransactionally("UNWIND range(0, 99) AS i CREATE (:Other {id: 'o' + i, embedding: $v})",
                Map.of("v", vector(random, dim)));
        db.executeTransactionally("CALL db.awaitIndexes(300)");
        String call = "CALL kgdb.nearestNodes('probe_vec', $q, $k) YIELD node, distance "
                + "RETURN node.id AS id, distance ORDER BY distance, id LIMIT $k";
        assertNearestIsBruteForce(call, vector(random, dim), 10);
        double built = VectorMatrix.cached(db, "probe_vec").buildMs;
        int next = n;
        for (int write = 0; write < 30; write++) {
            String id = String.format("p%04d", random.nextInt(next));
            List<Double> v = vector(random, dim);
            List<Map<String, Object>> before = rows("MATCH (x:Probe {id: $id}) RETURN x.embedding AS v", Map.of("id", id));
            List<Double> old = before.isEmpty() ? v : toList(before.get(0).get("v"));
            switch (write % 6) {
                case 0 -> db.executeTransactionally("MATCH (x:Probe {id: $id}) SET x.embedding = $v", Map.of("id", id, "v", v));
                case 1 -> db.executeTransactionally("MATCH (x:Probe {id: $id}) DETACH DELETE x", Map.of("id", id));
                case 2 -> db.executeTransactionally("CREATE (:Probe {id: $id, embedding: $v})",
                        Map.of("id", String.format("p%04d", next++), "v", v));
                case 3 -> db.executeTransactionally("MATCH (x:Probe {id: $id}) REMOVE x:Probe SET x:Other", Map.of("id", id));
                case 4 -> db.executeTransactionally("MATCH (x:Other {id: $o}) SET x:Probe",
                        Map.of("o", "o" + random.nextInt(100)));
                default -> db.executeTransactionally("MATCH (x:Probe) WITH x ORDER BY x.id SKIP $s LIMIT 3 "
                        + "SET x.embedding = CASE WHEN x.id < $id THEN [1.0, 2.0] ELSE $v END",
                        Map.of("s", random.nextInt(n - 3), "id", id, "v", v));
            }
            List<Double> near = (List<Double>) nodes.get(random.nextInt(n)).get("embedding");
            for (List<Double> q : List.of(near, v, old)) {
                assertNearestIsBruteForce(call, q, 1 + write % 12);
                assertMatrixIsBruteForce(q, 1 + write % 12);  // the copy itself, no fallback
            }
        }
        try (org.neo4j.graphdb.Transaction tx = db.beginTx()) {  // rolled back: nothing to patch
            tx.execute("MATCH (x:Probe) WITH x LIMIT 5 SET x.embedding = $v", Map.of("v", vector(random, dim)));
            tx.rollback();
        }
        assertNearestIsBruteForce(call, vector(random, dim), 7);
        VectorMatrix m = VectorMatrix.cached(db, "probe_vec");
        assertEquals(built, m.buildMs);  // never rebuilt
        assertTrue(m.patches >= 15, "patches " + m.patches);
        assertEquals(m.rows - m.retired.cardinality(), (long) m.live);
        assertEquals(one("MATCH (x:Probe) WHERE size(x.embedding) = 16 RETURN count(x)", Map.of()),
                one("CALL kgdb.vectorIndexes() YIELD index, rows WHERE index = 'probe_vec' RETURN rows", Map.of()));
        // more than a quarter of the rows at once: rebuilt
        db.executeTransactionally("MATCH (x:Probe) WITH x LIMIT 1000 SET x.embedding = [e IN x.embedding | e + 1.0]");
        assertNearestIsBruteForce(call, vector(random, dim), 5);
        assertEquals(0, VectorMatrix.cached(db, "probe_vec").patches);
        db.executeTransactionally("MATCH (n:Probe|Other) DETACH DELETE n");
        db.executeTransactionally("DROP INDEX probe_vec");
    }

    /** The copy's own answer (not the index a failed search falls back to) is brute force's:
     * internal ids and distances, ties included. */
    @SuppressWarnings("deprecation")
    private static void assertMatrixIsBruteForce(List<Double> q, int k) {
        double[] qv = Vectors.of(q, "q");
        List<Double> all = new ArrayList<>();
        Map<Long, Double> byId = new HashMap<>();
        for (Map<String, Object> row : rows("MATCH (n:Probe) RETURN id(n) AS id, n.embedding AS v", Map.of())) {
            if (row.get("v") == null || Vectors.of(row.get("v"), "v").length != q.size()) continue;
            double d = Vectors.l2(Vectors.of(row.get("v"), "v"), qv);
            all.add(d);
            byId.put((Long) row.get("id"), d);
        }
        all.sort(Double::compare);
        double kth = all.get(Math.min(k, all.size()) - 1);
        long expected = all.stream().filter(d -> d <= kth).count();
        VectorMatrix m = VectorMatrix.cached(db, "probe_vec");
        List<VectorMatrix.Hit> hits = m.nearest(qv, k, id -> { throw new AssertionError("read from the store"); });
        assertEquals(expected, hits.size());
        for (VectorMatrix.Hit hit : hits) assertEquals(byId.get(hit.nodeId()), hit.distance(), "node " + hit.nodeId());
    }

    private static List<Double> toList(Object stored) {
        List<Double> out = new ArrayList<>();
        for (double x : Vectors.of(stored, "v")) out.add(x);
        return out;
    }

    private static List<Double> vector(Random random, int dim) {
        List<Double> v = new ArrayList<>();
        for (int d = 0; d < dim; d++) v.add((double) (float) random.nextGaussian());
        return v;
    }

    @SuppressWarnings("unchecked")
    private static void assertNearestIsBruteForce(String call, List<Double> q, int k) {
        double[] qv = Vectors.of(q, "q");
        List<Map.Entry<String, Double>> brute = new ArrayList<>();
        for (Map<String, Object> row : rows("MATCH (n:Probe) RETURN n.id AS id, n.embedding AS v", Map.of())) {
            if (row.get("v") == null || Vectors.of(row.get("v"), "v").length != q.size()) continue;  // not indexed
            brute.add(Map.entry((String) row.get("id"), Vectors.l2(Vectors.of(row.get("v"), "v"), qv)));
        }
        brute.sort(Map.Entry.<String, Double>comparingByValue().thenComparing(Map.Entry.comparingByKey()));
        List<Map<String, Object>> got = rows(call, Map.of("q", q, "k", k));
        assertEquals(k, got.size());
        for (int i = 0; i < k; i++) {
            assertEquals(brute.get(i).getKey(), got.get(i).get("id"));
            assertEquals(brute.get(i).getValue(), (double) got.get(i).get("distance"));
        }
    }

    @Test
    void nearestNodesRejectsHostileArguments() {
        Map<String, Object> q = Map.of("q", List.of(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0));
        assertTrue(failure("CALL kgdb.nearestNodes('nope', $q, 3)", q).contains("there is no index named nope"));
        assertTrue(failure("CALL kgdb.nearestNodes('ent_id', $q, 3)", q).contains("is not a vector index of nodes"));
        assertTrue(failure("CALL kgdb.nearestRelationships('kgdb_entity_embedding_vector', $q, 3)", q).contains("not a vector index of relationships"));
        assertTrue(failure("CALL kgdb.nearestNodes('kgdb_entity_embedding_vector', $q, 0)", q).contains("k must be an integer from 1"));
        assertTrue(failure("CALL kgdb.nearestNodes('kgdb_entity_embedding_vector', $q, null)", q).contains("k must be an integer from 1"));
        assertTrue(failure("CALL kgdb.nearestNodes('kgdb_entity_embedding_vector', null, 3)", q).contains("vector is null"));
        assertTrue(failure("CALL kgdb.nearestNodes('kgdb_entity_embedding_vector', [], 3)", q).contains("vector is an empty list"));
        assertTrue(failure("CALL kgdb.nearestNodes(null, $q, 3)", q).contains("index is null"));
    }

    @Test
    void entitiesPutTheExactNameFirstAndToleratesTypos() {
        List<Map<String, Object>> got = rows("CALL kgdb.entities('Entity 17', 3) YIELD rank, id, name, type "
                + "RETURN rank, id, name, type", Map.of());
        assertEquals(3, got.size());
        assertEquals(Map.of("rank", 1L, "id", "e17", "name", "entity 17", "type", "Entity"), got.get(0));
        got = rows("CALL kgdb.entities('entiti 42') YIELD id RETURN id", Map.of());
        assertTrue(got.stream().anyMatch(r -> "e42".equals(r.get("id"))));
        assertTrue(rows("CALL kgdb.entities('   ') YIELD id RETURN id", Map.of()).isEmpty());
        assertTrue(failure("CALL kgdb.entities(null)", Map.of()).contains("kgdb: text must be given"));
        assertTrue(failure("CALL kgdb.entities('x', 0)", Map.of()).contains("kgdb: topK must be between 1 and 1000"));
    }

    @Test
    void nearestEntitiesAreRankedFlatRows() {
        List<Double> q = new ArrayList<>();
        for (int d = 0; d < DIM; d++) q.add(0.1 * d);
        List<Map<String, Object>> got = rows("CALL kgdb.nearestEntities($q, 4) YIELD rank, id, name, distance "
                + "RETURN rank, id, name, distance", Map.of("q", q));
        List<Map<String, Object>> want = rows("CALL kgdb.nearestNodes('kgdb_entity_embedding_vector', $q, 4) "
                + "YIELD node, distance RETURN node.id AS id, distance ORDER BY distance, id LIMIT 4", Map.of("q", q));
        assertEquals(4, got.size());
        for (int i = 0; i < 4; i++) {
            assertEquals((long) i + 1, got.get(i).get("rank"));
            assertEquals(want.get(i).get("id"), got.get(i).get("id"));
            assertEquals(want.get(i).get("distance"), got.get(i).get("distance"));
        }
    }

    // ------------------------------------------------------------------ SimGRAG matching
    static Map<String, Object> component(Random random, int nCand, int kTypes) {
        List<Map<String, Object>> ca = new ArrayList<>();
        for (int i = 0; i < nCand; i++) {
            ca.add(Map.of("id", String.format("e%02d", random.nextInt(60)), "d", (double) random.nextInt(4) / 4));
        }
        List<Map<String, Object>> t0 = new ArrayList<>(), t1 = new ArrayList<>();
        for (int i = 0; i < kTypes; i++) {
            t0.add(Map.of("type", TYPES[i], "d", (double) random.nextInt(3) / 2));
            t1.add(Map.of("type", TYPES[(i + 1) % 3], "d", (double) random.nextInt(3) / 2));
        }
        List<Map<String, Object>> cc = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            cc.add(Map.of("id", String.format("e%02d", random.nextInt(60)), "d", (double) random.nextInt(4) / 4));
        }
        Map<String, Object> nodes0 = new HashMap<>();
        nodes0.put("candidates", dedupe(ca));
        Map<String, Object> nodes1 = new HashMap<>();
        nodes1.put("candidates", null);
        Map<String, Object> nodes2 = new HashMap<>();
        nodes2.put("candidates", dedupe(cc));
        List<List<Boolean>> differ = List.of(List.of(true, true, true), List.of(true, true, true), List.of(true, true, true));
        return Map.of("label", "Entity", "anchor", 0L, "order", List.of(0L, 1L),
                "nodes", List.of(nodes0, nodes1, nodes2),
                "edges", List.of(Map.of("source", 0L, "target", 1L, "directed", false, "types", t0),
                        Map.of("source", 1L, "target", 2L, "directed", false, "types", t1)),
                "differ", differ);
    }

    static List<Map<String, Object>> dedupe(List<Map<String, Object>> items) {
        Map<Object, Map<String, Object>> out = new HashMap<>();
        for (Map<String, Object> item : items) out.putIfAbsent(item.get("id"), item);
        List<Map<String, Object>> list = new ArrayList<>(out.values());
        list.sort(Comparator.comparing(x -> (String) x.get("id")));
        return list;
    }

    static Map<String, Double> asMap(Object items, String key) {
        Map<String, Double> out = new HashMap<>();
        for (Object o : (List<?>) items) {
            Map<?, ?> m = (Map<?, ?>) o;
            out.put((String) m.get(key), (Double) m.get("d"));
        }
        return out;
    }

    @Test
    void simgragMatchEqualsTheBruteForceCypher() {
        Random random = new Random(11);
        for (int trial = 0; trial < 40; trial++) {
            Map<String, Object> c = component(random, 1 + random.nextInt(12), 1 + random.nextInt(3));
            List<?> nodes = (List<?>) c.get("nodes");
            List<?> edges = (List<?>) c.get("edges");
            Map<String, Object> p = new HashMap<>();
            p.put("c", c);
            int k = 1 + random.nextInt(6);
            p.put("k", (long) k);
            p.put("a", asMap(((Map<?, ?>) nodes.get(0)).get("candidates"), "id"));
            p.put("z", asMap(((Map<?, ?>) nodes.get(2)).get("candidates"), "id"));
            p.put("t0", asMap(((Map<?, ?>) edges.get(0)).get("types"), "type"));
            p.put("t1", asMap(((Map<?, ?>) edges.get(1)).get("types"), "type"));
            // Every match, ranked by GSD: the brute force whose GSDs the procedure must equal
            // row for row (distances are multiples of 1/4: many ties, every sum exact).
            List<Map<String, Object>> brute = rows(
                    "MATCH (a:Entity)-[r0]-(b:Entity)-[r1]-(c:Entity) "
                    + "WHERE a.id IN keys($a) AND c.id IN keys($z) AND type(r0) IN keys($t0) "
                    + "AND type(r1) IN keys($t1) AND r0 <> r1 AND a <> b AND b <> c AND a <> c "
                    + "RETURN $a[a.id] + $z[c.id] + $t0[type(r0)] + $t1[type(r1)] AS gsd "
                    + "ORDER BY gsd LIMIT $k", p);
            String call = "CALL kgdb.simgrag.match($c, $k) YIELD gsd, ids, names, triples RETURN gsd, ids, triples";
            List<Map<String, Object>> got = rows(call, p);
            assertEquals(got, rows(call, p), "trial " + trial + ": deterministic");
            assertEquals(brute.size(), got.size(), "trial " + trial);
            for (int i = 0; i < got.size(); i++) {
                Map<String, Object> row = got.get(i);
                assertEquals(brute.get(i).get("gsd"), row.get("gsd"), "trial " + trial + " row " + i);
                // each row a real match of the pattern, with the GSD of its candidates
                Map<String, Object> q = new HashMap<>(p);
                q.put("ids", row.get("ids"));
                q.put("triples", row.get("triples"));
                List<Map<String, Object>> check = rows(
                        "MATCH (a:Entity {id: $ids[0]})-[r0]-(b:Entity {id: $ids[1]})-[r1]-(c:Entity {id: $ids[2]}) "
                        + "WHERE r0 <> r1 AND a <> c AND [startNode(r0).id, type(r0), endNode(r0).id] = $triples[0] "
                        + "AND [startNode(r1).id, type(r1), endNode(r1).id] = $triples[1] "
                        + "RETURN $a[a.id] + $z[c.id] + $t0[type(r0)] + $t1[type(r1)] AS gsd LIMIT 1", q);
                assertEquals(1, check.size(), "trial " + trial + " row " + i + " is no match");
                assertEquals(row.get("gsd"), check.get(0).get("gsd"), "trial " + trial + " row " + i);
            }
        }
    }

    /** A hub with hundreds of equally distant paths: the search stops after k of them (a
     * partial-match budget far below the paths at that GSD is enough) and returns brute
     * force's GSDs. */
    @Test
    void simgragMatchStopsEarlyAmongTies() {
        db.executeTransactionally("UNWIND range(0, 399) AS i CREATE (h:Entity {id: 'hubleaf' + i, name: 'leaf'}) "
                + "WITH h, i MERGE (x:Entity {id: 'hub', name: 'hub'}) CREATE (x)-[:acted_in]->(h) "
                + "WITH h, i CREATE (h)-[:has_genre]->(:Entity {id: 'hubend' + i, name: 'end'})");
        try {
            List<Map<String, Object>> any = List.of(Map.of("type", "acted_in", "d", 0.5),
                    Map.of("type", "has_genre", "d", 0.25));
            Map<String, Object> n0 = new HashMap<>();
            n0.put("candidates", List.of(Map.of("id", "hub", "d", 0.125)));
            Map<String, Object> n1 = new HashMap<>();
            n1.put("candidates", null);
            Map<String, Object> c = new HashMap<>(Map.of("label", "Entity", "anchor", 0L, "order", List.of(0L, 1L),
                    "nodes", List.of(n0, n1, n1),
                    "edges", List.of(Map.of("source", 0L, "target", 1L, "directed", false, "types", any),
                            Map.of("source", 1L, "target", 2L, "directed", false, "types", any)),
                    "differ", List.of(List.of(true, true, true), List.of(true, true, true), List.of(true, true, true))));
            c.put("maxStates", 1000L);  // 400 leaves + a few: far fewer than 400 * 2 paths
            String call = "CALL kgdb.simgrag.match($c, 5) YIELD gsd, ids RETURN gsd, ids";
            List<Map<String, Object>> got = rows(call, Map.of("c", c));
            assertEquals(got, rows(call, Map.of("c", c)));
            List<Object> gsds = new ArrayList<>();
            for (Map<String, Object> row : got) gsds.add(row.get("gsd"));
            // hub -acted_in- leaf -has_genre- end: 0.125 + 0.5 + 0.25, 400 times
            assertEquals(List.of(0.875, 0.875, 0.875, 0.875, 0.875), gsds);
        } finally {
            db.executeTransactionally("MATCH (n:Entity) WHERE n.id STARTS WITH 'hub' DETACH DELETE n");
        }
    }

    // ------------------------------------------------------------------ one call per retrieval
    static List<Double> randomVector(Random random) {
        List<Double> v = new ArrayList<>();
        for (int d = 0; d < DIM; d++) v.add((double) (float) random.nextGaussian());
        return v;
    }

    /** The linker's candidates of one query: kgdb.nearestNodes cut to k by (distance, id). */
    static List<Map<String, Object>> linkerCandidates(String index, List<Double> q, long k) {
        return rows("CALL kgdb.nearestNodes($index, $q, $k) YIELD node, distance "
                + "WITH node[$key] AS id, node.name AS name, distance ORDER BY distance, id LIMIT $k "
                + "RETURN id, name, distance", Map.of("index", index, "q", q, "k", k,
                        "key", index.equals("kgdb_entity_embedding_vector") ? "id" : "name"));
    }

    /** kgdb.simgrag.search equals its parts run one by one: the linker's searches (entity per
     * name, relation type per phrase), then kgdb.simgrag.match of the component with those
     * candidates (each type at its best phrase's distance). */
    @Test
    @SuppressWarnings("unchecked")
    void simgragSearchEqualsItsPartsOneByOne() {
        Random random = new Random(31);
        List<Map<String, Object>> relTypes = new ArrayList<>();
        for (String t : TYPES) relTypes.add(Map.of("name", t, "embedding", randomVector(random)));
        db.executeTransactionally("CREATE VECTOR INDEX probe_rel_vec IF NOT EXISTS FOR (n:ProbeRelationType) "
                + "ON (n.embedding) OPTIONS {indexConfig: {`vector.dimensions`: 8, "
                + "`vector.similarity_function`: 'euclidean'}}");
        db.executeTransactionally("UNWIND $types AS t CREATE (n:ProbeRelationType) SET n = t",
                Map.of("types", relTypes));
        db.executeTransactionally("CALL db.awaitIndexes(300)");
        try {
            for (int trial = 0; trial < 25; trial++) {
                long kn = 1 + random.nextInt(8), kr = 1 + random.nextInt(3), k = 1 + random.nextInt(5);
                List<List<Double>> names = List.of(randomVector(random), randomVector(random));
                List<List<Double>> phrases = List.of(randomVector(random), randomVector(random));
                Map<String, Object> request = new HashMap<>();
                request.put("searches", List.of(
                        Map.of("index", "kgdb_entity_embedding_vector", "key", "id", "shown", "name", "k", kn, "vectors", names),
                        Map.of("index", "probe_rel_vec", "key", "name", "shown", "name", "k", kr, "vectors", phrases),
                        Map.of("index", "probe_rel_vec", "key", "name", "shown", "name", "k", 2L, "vectors", List.of(names.get(0)))));
                request.put("typeSearch", Map.of("search", 2L, "require", "NoSuchLabel", "ignore", List.of()));
                Map<String, Object> unknown = new HashMap<>();
                unknown.put("candidates", null);
                unknown.put("labels", Map.of("search", 2L, "queries", List.of(0L)));
                Map<String, Object> component = Map.of("label", "Entity", "anchor", 0L, "order", List.of(0L, 1L),
                        "nodes", List.of(Map.of("candidates", Map.of("search", 0L, "query", 0L)), unknown,
                                Map.of("candidates", Map.of("search", 0L, "query", 1L))),
                        "edges", List.of(
                                Map.of("source", 0L, "target", 1L, "directed", false,
                                        "types", Map.of("search", 1L, "queries", List.of(0L))),
                                Map.of("source", 1L, "target", 2L, "directed", trial % 2 == 0,
                                        "types", Map.of("search", 1L, "queries", List.of(0L, 1L)))),
                        "differ", List.of(List.of(true, true, true), List.of(true, true, true), List.of(true, true, true)));
                request.put("components", List.of(component));
                Map<String, Object> got = rows("CALL kgdb.simgrag.search($r, $k) YIELD candidates, subgraphs, "
                        + "vectorMs, matchMs, typesSearched RETURN *", Map.of("r", request, "k", k)).get(0);
                assertEquals(false, got.get("typesSearched"));  // the required label is not in use

                // the parts, one by one
                List<Map<String, Object>> want = new ArrayList<>();
                List<List<Map<String, Object>>> found = new ArrayList<>();
                for (int s = 0; s < 2; s++) {
                    for (int q = 0; q < 2; q++) {
                        List<Map<String, Object>> c = linkerCandidates(s == 0 ? "kgdb_entity_embedding_vector"
                                : "probe_rel_vec", (s == 0 ? names : phrases).get(q), s == 0 ? kn : kr);
                        found.add(c);
                        for (Map<String, Object> row : c) {
                            Map<String, Object> w = new HashMap<>(row);  // a name may be null
                            w.put("search", (long) s);
                            w.put("query", (long) q);
                            want.add(w);
                        }
                    }
                }
                assertEquals(want, got.get("candidates"), "trial " + trial);
                Map<String, Double> t1 = new HashMap<>();
                for (Map<String, Object> row : found.get(2)) t1.merge((String) row.get("id"), (Double) row.get("distance"), Math::min);
                for (Map<String, Object> row : found.get(3)) t1.merge((String) row.get("id"), (Double) row.get("distance"), Math::min);
                Map<String, Object> plainUnknown = new HashMap<>();
                plainUnknown.put("candidates", null);
                Map<String, Object> plain = Map.of("label", "Entity", "anchor", 0L, "order", List.of(0L, 1L),
                        "nodes", List.of(Map.of("candidates", idsAndDistances(found.get(0), "id")), plainUnknown,
                                Map.of("candidates", idsAndDistances(found.get(1), "id"))),
                        "edges", List.of(
                                Map.of("source", 0L, "target", 1L, "directed", false, "types", idsAndDistances(found.get(2), "type")),
                                Map.of("source", 1L, "target", 2L, "directed", trial % 2 == 0, "types",
                                        t1.entrySet().stream().map(e -> (Map<String, Object>) (Map<?, ?>) Map.of("type", e.getKey(), "d", e.getValue())).toList())),
                        "differ", component.get("differ"));
                List<Map<String, Object>> matched = rows("CALL kgdb.simgrag.match($c, $k) YIELD gsd, ids, names, triples "
                        + "RETURN 0 AS component, gsd, ids, names, triples", Map.of("c", plain, "k", k));
                assertEquals(matched, got.get("subgraphs"), "trial " + trial);
                assertTrue((double) got.get("vectorMs") >= 0 && (double) got.get("matchMs") >= 0);
            }
            // the type search: only where the required label is in use beside others, and only
            // candidates that are labels in use (a relation type node named like a label here)
            List<Double> v = randomVector(random);
            db.executeTransactionally("CREATE (:ProbeRelationType {name: 'Entity', embedding: $v})", Map.of("v", v));
            for (String require : List.of("Entity", "NoSuchLabel")) {
                Map<String, Object> typed = new HashMap<>();
                typed.put("searches", List.of(Map.of("index", "probe_rel_vec", "key", "name", "shown", "name",
                        "k", 4L, "vectors", List.of(v))));
                typed.put("typeSearch", Map.of("search", 0L, "require", require, "ignore", List.of()));
                typed.put("components", List.of());
                Map<String, Object> got = rows("CALL kgdb.simgrag.search($r, 3) YIELD candidates, typesSearched "
                        + "RETURN *", Map.of("r", typed)).get(0);
                assertEquals(require.equals("Entity"), got.get("typesSearched"));
                List<?> ids = ((List<Map<String, Object>>) got.get("candidates")).stream().map(c -> c.get("id")).toList();
                assertEquals(require.equals("Entity") ? List.of("Entity") : List.of(), ids);
            }
            // no texts: no candidates, nothing matched
            Map<String, Object> request = new HashMap<>();
            request.put("searches", List.of(Map.of("index", "kgdb_entity_embedding_vector", "key", "id",
                    "shown", "name", "k", 3L, "vectors", List.of())));
            request.put("components", List.of());
            Map<String, Object> got = rows("CALL kgdb.simgrag.search($r, 3) YIELD candidates, subgraphs RETURN *",
                    Map.of("r", request)).get(0);
            assertEquals(List.of(), got.get("candidates"));
            assertEquals(List.of(), got.get("subgraphs"));
        } finally {
            db.executeTransactionally("MATCH (n:ProbeRelationType) DETACH DELETE n");
            db.executeTransactionally("DROP INDEX probe_rel_vec");
        }
    }

    static List<Map<String, Object>> idsAndDistances(List<Map<String, Object>> rows, String key) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Map<String, Object> row : rows) out.add(Map.of(key, row.get("id"), "d", row.get("distance")));
        return out;
    }

    @Test
    void simgragSearchRejectsHostileArguments() {
        String call = "CALL kgdb.simgrag.search($r, $k) YIELD subgraphs RETURN subgraphs";
        Map<String, Object> search = Map.of("index", "kgdb_entity_embedding_vector", "key", "id", "shown", "name",
                "k", 3L, "vectors", List.of(List.of(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)));
        assertTrue(failure("CALL kgdb.simgrag.search(null, 3)", Map.of()).contains("kgdb.simgrag.search: request is null"));
        assertTrue(failure(call, Map.of("r", Map.of("searches", List.of(), "components", List.of()), "k", 0L))
                .contains("k must be an integer from 1"));
        assertTrue(failure(call, Map.of("r", Map.of("components", List.of()), "k", 3L)).contains("searches must be a list, not null"));
        Map<String, Object> bad = new HashMap<>(search);
        bad.put("index", "nope");
        assertTrue(failure(call, Map.of("r", Map.of("searches", List.of(bad), "components", List.of()), "k", 3L))
                .contains("searches[0].vectors[0]: kgdb.nearestNodes: there is no index named nope"));
        bad = new HashMap<>(search);
        bad.put("vectors", List.of(List.of(1.0, Double.NaN)));
        assertTrue(failure(call, Map.of("r", Map.of("searches", List.of(bad), "components", List.of()), "k", 3L))
                .contains("is NaN"));
        bad = new HashMap<>(search);
        bad.put("k", 0L);
        assertTrue(failure(call, Map.of("r", Map.of("searches", List.of(bad), "components", List.of()), "k", 3L))
                .contains("searches[0].vectors[0]: k must be an integer from 1"));
        Map<String, Object> component = Map.of("nodes", List.of(Map.of("candidates", Map.of("search", 0L, "query", 5L))),
                "edges", List.of());
        assertTrue(failure(call, Map.of("r", Map.of("searches", List.of(search), "components", List.of(component)), "k", 3L))
                .contains("components[0].nodes[0].candidates.query must be an index from 0 to 0, not 5"));
        component = Map.of("nodes", "x", "edges", List.of());
        assertTrue(failure(call, Map.of("r", Map.of("searches", List.of(search), "components", List.of(component)), "k", 3L))
                .contains("components[0].nodes must be a list"));
    }

    @Test
    void simgragMatchRejectsHostileArguments() {
        Map<String, Object> c = component(new Random(5), 3, 2);
        assertTrue(failure("CALL kgdb.simgrag.match(null, 3)", Map.of()).contains("component is null"));
        assertTrue(failure("CALL kgdb.simgrag.match($c, 0)", Map.of("c", c)).contains("k must be an integer from 1"));
        Map<String, Object> bad = new HashMap<>(c);
        bad.put("anchor", 1L);
        assertTrue(failure("CALL kgdb.simgrag.match($c, 3)", Map.of("c", bad)).contains("anchor node 1 has no candidates"));
        bad.put("anchor", 7L);
        assertTrue(failure("CALL kgdb.simgrag.match($c, 3)", Map.of("c", bad)).contains("anchor must be an index from 0 to 2"));
        bad = new HashMap<>(c);
        bad.put("nodes", List.of(Map.of("candidates", List.of(Map.of("id", "e01", "d", Double.NaN))), Map.of(), Map.of()));
        assertTrue(failure("CALL kgdb.simgrag.match($c, 3)", Map.of("c", bad)).contains("nodes[0].candidates[0].d must be a finite"));
        bad.put("nodes", "x");
        assertTrue(failure("CALL kgdb.simgrag.match($c, 3)", Map.of("c", bad)).contains("nodes must be a list"));
        bad = new HashMap<>(c);
        bad.put("order", List.of(1L, 1L));
        assertTrue(failure("CALL kgdb.simgrag.match($c, 3)", Map.of("c", bad)).contains("repeats an edge"));
        // 10^5 candidates (most of them ids that do not exist): answered, not a server failure
        List<Map<String, Object>> many = new ArrayList<>();
        for (int i = 0; i < 100_000; i++) many.add(Map.of("id", "x" + i, "d", 0.5));
        many.add(Map.of("id", "e01", "d", 0.1));
        Map<String, Object> n0 = new HashMap<>();
        n0.put("candidates", many);
        bad = new HashMap<>(c);
        bad.put("nodes", List.of(n0, ((List<?>) c.get("nodes")).get(1), ((List<?>) c.get("nodes")).get(2)));
        rows("CALL kgdb.simgrag.match($c, 3) YIELD gsd RETURN gsd", Map.of("c", bad));
        bad.put("maxStates", 10L);
        assertTrue(failure("CALL kgdb.simgrag.match($c, 3) YIELD gsd RETURN gsd", Map.of("c", bad)).contains("more than 10 partial matches"));
    }
}
