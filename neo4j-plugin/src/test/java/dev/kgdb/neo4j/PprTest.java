package dev.kgdb.neo4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.QueryExecutionException;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

/** kgdb.ppr on a real in-process Neo4j: random weighted directed graphs with dangling and
 * isolated nodes, against the fixed point computed here by plain power iteration to 1e-15. */
class PprTest {
    static Neo4j neo4j;
    static GraphDatabaseService db;

    @BeforeAll
    static void start() {
        neo4j = Neo4jBuilders.newInProcessBuilder().withDisabledServer().withProcedure(Ppr.class).build();
        db = neo4j.defaultDatabaseService();
    }

    @AfterAll
    static void stop() {
        neo4j.close();
    }

    /** Writes n nodes (the first half chunks) and their edges as the stored projection's blocks of
     * 3 slots (kgdb/documents/ppr_graph.py), in creation order after one free slot; returns the
     * internal ids. */
    static long[] write(int n, double[][] w, String projection) {
        db.executeTransactionally("MATCH (x) DETACH DELETE x");
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ids.add((Long) db.executeTransactionally("CREATE (c:Chunk {n: $i}) RETURN id(c) AS id",
                    Map.of("i", i), r -> r.next().get("id")));
        }
        List<Long> slots = new ArrayList<>(List.of(-1L));
        slots.addAll(ids);
        List<String> versions = new ArrayList<>();
        for (int first = 0; first < slots.size(); first += 3) {
            List<Long> nodes = new ArrayList<>(), kinds = new ArrayList<>(), offsets = new ArrayList<>(List.of(0L));
            List<Long> adj = new ArrayList<>();
            List<Double> prob = new ArrayList<>();
            for (int s = first; s < Math.min(first + 3, slots.size()); s++) {
                nodes.add(slots.get(s));
                int u = s - 1;
                kinds.add(u < 0 ? 0L : (u < n / 2 ? 1L : 2L));
                if (u >= 0) {
                    double out = 0;
                    for (int v = 0; v < n; v++) out += w[u][v];
                    for (int v = 0; v < n; v++) {
                        if (w[u][v] > 0) { adj.add((long) v + 1); prob.add(w[u][v] / out); }
                    }
                }
                offsets.add((long) adj.size());
            }
            String version = projection + "/" + first;
            versions.add(version);
            db.executeTransactionally("CREATE (b:KgdbPprBlock {block: $block}) SET b.version = $version, "
                    + "b.nodes = $nodes, b.kinds = $kinds, b.offsets = $offsets, b.adj = $adj, b.prob = $prob",
                    Map.of("block", first / 3, "version", version, "nodes", nodes, "kinds", kinds,
                            "offsets", offsets, "adj", adj, "prob", prob));
        }
        db.executeTransactionally("CREATE (m:KgdbMeta {key: 'ppr'}) SET m.versions = $versions, "
                + "m.projection = $projection", Map.of("versions", versions, "projection", projection));
        return ids.stream().mapToLong(Long::longValue).toArray();
    }

    static double[] reference(double[][] w, double[] s, double d) {
        int n = s.length;
        double[] r = new double[n];
        for (int it = 0; it < 200; it++) {
            double[] next = new double[n];
            for (int u = 0; u < n; u++) {
                double out = 0;
                for (int v = 0; v < n; v++) out += w[u][v];
                if (out == 0) continue;
                for (int v = 0; v < n; v++) next[v] += d * r[u] * w[u][v] / out;
            }
            for (int v = 0; v < n; v++) next[v] += (1 - d) * s[v];
            r = next;
        }
        return r;
    }

    @Test
    void equalsTheFixedPointWithBoosts() {
        Random random = new Random(11);
        for (int trial = 0; trial < 12; trial++) {
            int n = 4 + random.nextInt(12);
            double[][] w = new double[n][n];
            for (int e = 0; e < 3 * n; e++) {
                int u = random.nextInt(n - 1), v = random.nextInt(n - 1);  // node n-1 isolated
                w[u][v] += 0.1 + random.nextDouble() * 3;
            }
            long[] ids = write(n, w, "p" + trial);
            double[] s = new double[n];
            List<Long> seeds = new ArrayList<>();
            List<Double> weights = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                int at = random.nextInt(n);
                double x = 0.05 + random.nextDouble();
                seeds.add(ids[at]); weights.add(x); s[at] += x;
            }
            double sum = 0;
            for (double x : s) sum += x;
            for (int i = 0; i < n; i++) s[i] /= sum;
            double d = trial % 2 == 0 ? 0.5 : 0.85;
            double[] r = reference(w, s, d);
            boolean boosted = trial % 3 == 0;
            List<Long> boostNodes = boosted ? List.of(ids[0], ids[n / 2 - 1]) : List.of();
            List<Double> boostValues = boosted ? List.of(0.3, 0.1) : List.of();
            List<Map<String, Object>> rows = db.executeTransactionally(
                    "CALL kgdb.ppr($seeds, $weights, $d, 1e-13, 100, $bn, $bv) YIELD node, score, pagerank "
                            + "RETURN node.n AS n, score, pagerank",
                    Map.of("seeds", seeds, "weights", weights, "d", d, "bn", boostNodes, "bv", boostValues),
                    res -> { List<Map<String, Object>> out = new ArrayList<>(); res.forEachRemaining(out::add); return out; });
            double top = 0;
            for (int c = 0; c < n / 2; c++) top = Math.max(top, r[c]);
            Map<Long, Double> got = new TreeMap<>();
            double last = Double.POSITIVE_INFINITY;
            for (Map<String, Object> row : rows) {
                long c = ((Number) row.get("n")).longValue();
                double pr = (Double) row.get("pagerank"), score = (Double) row.get("score");
                assertTrue(c < n / 2, "only chunks are rows");
                assertEquals(r[(int) c], pr, 1e-6);
                double boost = !boosted ? 0 : (c == 0 ? 0.3 : 0) + (c == n / 2 - 1 ? 0.1 : 0);
                assertEquals(boosted ? pr / top + boost : pr, score, 1e-6);
                assertTrue(score <= last);
                last = score;
                got.put(c, pr);
            }
            for (int c = 0; c < n / 2; c++) {
                if (r[c] > 1e-9) assertTrue(got.containsKey((long) c), "chunk " + c + " missing");
            }
        }
    }

    static String run(String cypher) {  // the rows read: a procedure runs when they are pulled
        return db.executeTransactionally(cypher, Map.of(), r -> r.resultAsString());
    }

    @Test
    void refusesBadArguments() {
        write(4, new double[][] {{0, 1, 0, 0}, {1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}, "bad");
        for (String call : List.of(
                "CALL kgdb.ppr([-5], [1.0], 0.5, 1e-9, 5, [], []) YIELD node RETURN node",
                "CALL kgdb.ppr([], [1.0], 0.5, 1e-9, 5, [], []) YIELD node RETURN node",
                "CALL kgdb.ppr([], [], 1.0, 1e-9, 5, [], []) YIELD node RETURN node",
                "CALL kgdb.ppr([], [], 0.5, 0.0, 5, [], []) YIELD node RETURN node",
                "CALL kgdb.ppr([], [], 0.5, 1e-9, 5, [1], []) YIELD node RETURN node")) {
            assertThrows(QueryExecutionException.class, () -> run(call));
        }
        db.executeTransactionally("MATCH (m:KgdbMeta) DETACH DELETE m");
        QueryExecutionException e = assertThrows(QueryExecutionException.class, () -> run(
                "CALL kgdb.ppr([], [], 0.5, 1e-9, 5, [], []) YIELD node RETURN node"));
        assertTrue(e.getMessage().contains("run kgdb index ppr"), e.getMessage());
    }
}
