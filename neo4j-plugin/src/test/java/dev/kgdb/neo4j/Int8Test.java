package dev.kgdb.neo4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.BitSet;
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

/** The int8 copy ({@link Int8Rows}): its answers equal a brute-force scan (ids and exact
 * distances, ties included) on composed and random vectors, its re-rank keeps exact distances
 * and order even when its budget is too small to prove the answer, it is chosen by
 * kgdb.vectors.copy and automatically when the float copy would not fit, and committed writes
 * are patched into it. */
class Int8Test {
    static Neo4j neo4j;
    static GraphDatabaseService db;

    @BeforeAll
    static void start() {
        neo4j = Neo4jBuilders.newInProcessBuilder().withDisabledServer()
                .withFunction(Functions.class).withProcedure(Nearest.class).build();
        db = neo4j.defaultDatabaseService();
    }

    @AfterAll
    static void stop() {
        VectorMatrix.copyOverride = null;
        System.clearProperty(VectorMatrix.HEAP_SHARE_SETTING);
        neo4j.close();
    }

    /** (row, exact distance) of the k nearest rows and every row tied with the k-th. */
    private static List<double[]> brute(double[][] rows, double[] q, int k) {
        List<double[]> all = new ArrayList<>();
        for (int r = 0; r < rows.length; r++) all.add(new double[] {r, Vectors.l2(rows[r], q)});
        all.sort((a, b) -> a[1] != b[1] ? Double.compare(a[1], b[1]) : Double.compare(a[0], b[0]));
        double kth = all.get(k - 1)[1];
        int end = k;
        while (end < all.size() && all.get(end)[1] == kth) end++;
        return all.subList(0, end);
    }

    private static void assertSame(List<double[]> want, List<VectorMatrix.Hit> got, String where) {
        assertEquals(want.size(), got.size(), where);
        java.util.Set<Long> wantIds = new java.util.HashSet<>(), gotIds = new java.util.HashSet<>();
        for (int i = 0; i < want.size(); i++) {
            assertEquals(want.get(i)[1], got.get(i).distance(), where + ": distance of row " + i);
            wantIds.add((long) want.get(i)[0]);
            gotIds.add(got.get(i).nodeId());
        }
        assertEquals(wantIds, gotIds, where);  // the same rows (ties in any order)
    }

    @Test
    void int8SearchEqualsBruteForceOnComposedAndRandomVectors() {
        int n = 6000, dim = 48;
        for (String set : List.of("composed", "gaussian", "duplicates")) {
            Random random = new Random(38);
            double[][] rows = set.equals("gaussian") ? Int8Bench.gaussian(random, n, dim)
                    : Int8Bench.composed(random, n, dim);
            if (set.equals("duplicates")) {
                for (int r = 1; r < n; r += 3) rows[r] = rows[r - 1].clone();  // ties at the k-th
            }
            long[] ids = new long[n];
            for (int r = 0; r < n; r++) ids[r] = r;
            VectorMatrix m = VectorMatrix.int8FromRows("L", "p", dim, 0, rows, ids);
            assertEquals("int8", m.kind());
            // a fifth of the float copy's memory at this size: dim + 8 bytes a row, + the ids
            assertEquals((long) ((n + 1023) / 1024) * 1024 * (dim + 16), m.bytes());
            int proved = 0;
            for (int t = 0; t < 30; t++) {
                double[] q = set.equals("gaussian") ? Int8Bench.gaussian(random, 1, dim)[0]
                        : Int8Bench.composedQuery(random, rows, t % 3, dim);
                int k = t % 2 == 0 ? 1 + t : 100;
                List<VectorMatrix.Hit> got = m.nearest(q, k, id -> Vectors.l2(rows[(int) id], q));
                if (m.lastProved) {
                    assertSame(brute(rows, q, k), got, set + " query " + t);
                    proved++;
                }
                assertTrue(m.lastRecomputed <= 2 * Math.max(64, 4 * k), "re-ranked " + m.lastRecomputed);
            }
            assertTrue(proved >= 28, set + ": proved " + proved + " of 30");
        }
    }

    @Test
    void theReRankKeepsExactDistancesWhenItCannotProve() {
        int n = 5000, dim = 32;
        Random random = new Random(7);
        double[][] rows = Int8Bench.gaussian(random, n, dim);
        long[] ids = new long[n];
        for (int r = 0; r < n; r++) ids[r] = 1000 + r;
        VectorMatrix m = VectorMatrix.int8FromRows("L", "p", dim, 0, rows, ids);
        double recall = 0;
        for (int t = 0; t < 20; t++) {
            double[] q = Int8Bench.gaussian(random, 1, dim)[0];
            int k = 50;
            Int8Rows.Stats stats = new Int8Rows.Stats();
            List<VectorMatrix.Hit> got = m.int8.nearest(q, k, m.rows, m.retired, m.live, m.nodeIds, k, 0,
                    id -> Vectors.l2(rows[(int) id - 1000], q), stats);
            assertEquals(k, stats.shortList);
            assertFalse(stats.proved, "a short list of k rows and no budget left rows unproved");
            assertEquals(k, got.size());
            for (int i = 0; i < got.size(); i++) {  // exact distances from the store, in order
                assertEquals(Vectors.l2(rows[(int) got.get(i).nodeId() - 1000], q), got.get(i).distance());
                if (i > 0) assertTrue(got.get(i - 1).distance() <= got.get(i).distance());
            }
            java.util.Set<Long> truth = new java.util.HashSet<>();
            for (double[] w : brute(rows, q, k)) truth.add((long) w[0] + 1000);
            for (VectorMatrix.Hit h : got) if (truth.contains(h.nodeId())) recall += 1.0 / k / 20;
        }
        assertTrue(recall > 0.5, "recall@50 of a bare 1x short list: " + recall);
    }

    private static List<Double> vector(Random random, int dim) {
        List<Double> v = new ArrayList<>();
        for (int d = 0; d < dim; d++) v.add((double) (float) random.nextGaussian());
        return v;
    }

    @SuppressWarnings("unchecked")
    private void assertNearestIsBruteForce(List<Double> q, int k) {
        double[] qv = Vectors.of(q, "q");
        List<double[]> all = new ArrayList<>();
        Map<Long, Double> byId = new HashMap<>();
        db.executeTransactionally("MATCH (n:Quant) RETURN id(n) AS id, n.embedding AS v", Map.of(), r -> {
            r.forEachRemaining(row -> {
                double[] v = Vectors.of(row.get("v"), "v");
                if (v.length == q.size()) {
                    all.add(new double[] {(Long) row.get("id"), Vectors.l2(v, qv)});
                    byId.put((Long) row.get("id"), Vectors.l2(v, qv));
                }
            });
            return null;
        });
        all.sort((a, b) -> a[1] != b[1] ? Double.compare(a[1], b[1]) : Double.compare(a[0], b[0]));
        List<Map<String, Object>> got = db.executeTransactionally("CALL kgdb.nearestNodes('quant_vec', $q, $k) "
                + "YIELD node, distance RETURN id(node) AS id, distance ORDER BY distance, id LIMIT $k",
                Map.of("q", q, "k", k), r -> r.stream().toList());
        assertEquals(Math.min(k, all.size()), got.size());
        for (int i = 0; i < got.size(); i++) {
            assertEquals(all.get(i)[1], got.get(i).get("distance"), "row " + i);
            assertEquals(byId.get((Long) got.get(i).get("id")), got.get(i).get("distance"));
        }
    }

    @Test
    void chosenBySettingOrAutomaticallyAndPatchedByWrites() {
        int dim = 24, n = 3000;
        Random random = new Random(11);
        db.executeTransactionally("CREATE VECTOR INDEX quant_vec IF NOT EXISTS FOR (n:Quant) ON (n.embedding) "
                + "OPTIONS {indexConfig: {`vector.dimensions`: 24, `vector.similarity_function`: 'euclidean'}}");
        List<Map<String, Object>> nodes = new ArrayList<>();
        for (int i = 0; i < n; i++) nodes.add(Map.of("i", (long) i, "embedding", vector(random, dim)));
        db.executeTransactionally("UNWIND $nodes AS n CREATE (e:Quant) SET e = n", Map.of("nodes", nodes));
        db.executeTransactionally("CALL db.awaitIndexes(300)");
        String state = "CALL kgdb.vectorIndexes() YIELD index, copy, copyBytes, rows, lastProved, patches "
                + "WHERE index = 'quant_vec' RETURN copy, copyBytes, rows, lastProved, patches";
        try {
            // the default: float32 (it fits a quarter of the heap)
            assertNearestIsBruteForce(vector(random, dim), 10);
            assertEquals("float32", db.executeTransactionally(state, Map.of(), r -> r.next().get("copy")));
            // auto, with a share of the heap the float copy does not fit and the int8 one does
            long heap = Runtime.getRuntime().maxMemory();
            long floatBytes = (long) n * (dim + 12 + 2) * 4, int8Bytes = 3L * 1024 * Int8Rows.rowBytes(dim);
            assertTrue(int8Bytes < floatBytes);
            System.setProperty(VectorMatrix.HEAP_SHARE_SETTING, Double.toString((int8Bytes + floatBytes) / 2.0 / heap));
            db.executeTransactionally("MATCH (n:Quant {i: 0}) SET n.embedding = $v", Map.of("v", vector(random, dim)));
            db.executeTransactionally("MATCH (n:Quant) WITH n LIMIT 1000 SET n.embedding = [x IN n.embedding | x + 0.0]");
            assertNearestIsBruteForce(vector(random, dim), 10);
            Map<String, Object> s = db.executeTransactionally(state, Map.of(), r -> r.next());
            assertEquals("int8", s.get("copy"), s.toString());
            assertEquals((long) n, s.get("rows"));
            assertEquals(true, s.get("lastProved"));
            System.clearProperty(VectorMatrix.HEAP_SHARE_SETTING);
            // writes patched in: moved, deleted and new rows, each seen by the next search
            VectorMatrix.copyOverride = "int8";
            for (int w = 0; w < 12; w++) {
                List<Double> v = vector(random, dim);
                switch (w % 3) {
                    case 0 -> db.executeTransactionally("MATCH (n:Quant {i: $i}) SET n.embedding = $v",
                            Map.of("i", (long) random.nextInt(n), "v", v));
                    case 1 -> db.executeTransactionally("MATCH (n:Quant {i: $i}) DETACH DELETE n",
                            Map.of("i", (long) random.nextInt(n)));
                    default -> db.executeTransactionally("CREATE (:Quant {i: -1, embedding: $v})",
                            Map.of("v", List.of(5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0,
                                    5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0)));  // clipped codes
                }
                assertNearestIsBruteForce(v, 1 + w);
            }
            Map<String, Object> after = db.executeTransactionally(state, Map.of(), r -> r.next());
            assertEquals("int8", after.get("copy"));
            assertTrue((Long) after.get("patches") >= 10, after.toString());
            // a bad setting: one line naming it
            VectorMatrix.copyOverride = "int4";
            QueryExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(QueryExecutionException.class,
                    () -> assertNearestIsBruteForce(vector(random, dim), 3));
            assertTrue(e.getMessage().contains("kgdb.vectors.copy must be auto, float32 or int8, not 'int4'"),
                    e.getMessage());
        } finally {
            VectorMatrix.copyOverride = null;
            System.clearProperty(VectorMatrix.HEAP_SHARE_SETTING);
            db.executeTransactionally("MATCH (n:Quant) DETACH DELETE n");
            db.executeTransactionally("DROP INDEX quant_vec");
        }
    }
}
