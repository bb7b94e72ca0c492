package dev.kgdb.neo4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.QueryExecutionException;
import org.neo4j.graphdb.Transaction;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

/** kgdb.nearestNodes is a brute-force scan of the data the calling transaction sees (its own
 * uncommitted writes included, integer vectors included), under random writes, updates,
 * deletes, relabels and rollbacks interleaved with searches (seeded); a dropped index's copy is
 * freed; kgdb.cosine is scale safe (issue 35). */
class OwnWritesTest {
    static Neo4j neo4j;
    static GraphDatabaseService db;
    static final int DIM = 8;
    static final String CALL = "CALL kgdb.nearestNodes('own_vec', $q, $k) YIELD node, distance "
            + "RETURN id(node) AS id, distance ORDER BY distance, id LIMIT $k";

    @BeforeAll
    static void start() {
        neo4j = Neo4jBuilders.newInProcessBuilder().withDisabledServer()
                .withFunction(Functions.class).withProcedure(Nearest.class).build();
        db = neo4j.defaultDatabaseService();
    }

    @AfterAll
    static void stop() {
        neo4j.close();
    }

    /** A random vector: floats, or (one in four) a list of integers as Cypher stores [1, 2, 3]. */
    private static List<Object> vector(Random random) {
        List<Object> v = new ArrayList<>();
        boolean ints = random.nextInt(4) == 0;
        for (int d = 0; d < DIM; d++) {
            if (ints) v.add((long) (random.nextInt(9) - 4));
            else v.add((double) (float) random.nextGaussian() * 2);
        }
        return v;
    }

    private static double[] valid(Object stored) {
        if (stored == null) return null;
        try {
            double[] v = Vectors.of(stored, "v");
            return v.length == DIM ? v : null;
        } catch (IllegalArgumentException e) {
            return null;  // not a list of numbers: not indexed
        }
    }

    /** The brute-force answer inside {@code tx}: (internal id, distance) by distance then id, the
     * first k and any tied with the k-th. */
    private static List<double[]> brute(Transaction tx, double[] q, int k) {
        List<double[]> all = new ArrayList<>();
        try (var r = tx.execute("MATCH (n:Probe) RETURN id(n) AS id, n.embedding AS v")) {
            while (r.hasNext()) {
                Map<String, Object> row = r.next();
                double[] v = valid(row.get("v"));
                if (v != null) all.add(new double[] {(Long) row.get("id"), Vectors.l2(v, q)});
            }
        }
        all.sort((a, b) -> a[1] != b[1] ? Double.compare(a[1], b[1]) : Double.compare(a[0], b[0]));
        return all.subList(0, Math.min(k, all.size()));
    }

    private static void assertSearchIsBrute(Transaction tx, double[] q, int k, String where) {
        List<Double> ql = new ArrayList<>();
        for (double x : q) ql.add(x);
        List<double[]> want = brute(tx, q, k);
        List<double[]> got = new ArrayList<>();
        try (var r = tx.execute(CALL, Map.of("q", ql, "k", k))) {
            while (r.hasNext()) {
                Map<String, Object> row = r.next();
                got.add(new double[] {(Long) row.get("id"), (Double) row.get("distance")});
            }
        }
        assertEquals(want.size(), got.size(), where);
        for (int i = 0; i < want.size(); i++) {
            assertEquals((long) want.get(i)[0], (long) got.get(i)[0], where + ": row " + i);
            assertEquals(want.get(i)[1], got.get(i)[1], where + ": distance of row " + i);
        }
    }

    private static double[] query(Transaction tx, Random random, List<Long> ids) {
        if (!ids.isEmpty() && random.nextBoolean()) {  // on (or next to) a node, maybe one just written
            long id = ids.get(random.nextInt(ids.size()));
            try (var r = tx.execute("MATCH (n) WHERE id(n) = $id RETURN n.embedding AS v", Map.of("id", id))) {
                if (r.hasNext()) {
                    double[] v = valid(r.next().get("v"));
                    if (v != null) {
                        if (random.nextBoolean()) v[random.nextInt(DIM)] += 0.01;
                        return v;
                    }
                }
            }
        }
        double[] q = new double[DIM];
        for (int d = 0; d < DIM; d++) q[d] = random.nextGaussian() * 2;
        return q;
    }

    @Test
    void exactSearchIsBruteForceOfWhatTheTransactionSees() {
        Random random = new Random(35);
        db.executeTransactionally("CREATE VECTOR INDEX own_vec IF NOT EXISTS FOR (n:Probe) ON (n.embedding) "
                + "OPTIONS {indexConfig: {`vector.dimensions`: 8, `vector.similarity_function`: 'euclidean'}}");
        List<Map<String, Object>> rows = new ArrayList<>();
        for (int i = 0; i < 1500; i++) rows.add(Map.of("embedding", vector(random)));
        db.executeTransactionally("UNWIND $rows AS r CREATE (n:Probe) SET n = r", Map.of("rows", rows));
        db.executeTransactionally("UNWIND range(1, 50) AS i CREATE (:Other {embedding: $v})",
                Map.of("v", vector(random)));
        db.executeTransactionally("CALL db.awaitIndexes(300)");
        List<Long> ids = new ArrayList<>(db.executeTransactionally("MATCH (n) RETURN id(n) AS id", Map.of(),
                r -> r.stream().map(m -> (Long) m.get("id")).toList()));
        int searches = 0, inWriting = 0, rolledBack = 0;
        for (int round = 0; round < 120; round++) {
            try (Transaction tx = db.beginTx()) {
                int writes = random.nextInt(5);
                for (int w = 0; w < writes; w++) {
                    long id = ids.get(random.nextInt(ids.size()));
                    switch (random.nextInt(9)) {
                        case 8 -> tx.execute("MATCH (a), (b) WHERE id(a) = $id AND id(b) = $other "
                                + "CREATE (a)-[:NEAR]->(b) SET a.seen = true, b:Seen",
                                Map.of("id", id, "other", ids.get(random.nextInt(ids.size()))));  // no vector changes
                        case 0, 1 -> ids.add((Long) tx.execute("CREATE (n:Probe {embedding: $v}) RETURN id(n) AS id",
                                Map.of("v", vector(random))).next().get("id"));
                        case 2, 3 -> tx.execute("MATCH (n:Probe) WHERE id(n) = $id SET n.embedding = $v",
                                Map.of("id", id, "v", vector(random)));
                        case 4 -> tx.execute("MATCH (n) WHERE id(n) = $id DETACH DELETE n", Map.of("id", id));
                        case 5 -> tx.execute("MATCH (n:Probe) WHERE id(n) = $id REMOVE n:Probe SET n:Other",
                                Map.of("id", id));
                        case 6 -> tx.execute("MATCH (n:Other) WHERE id(n) = $id REMOVE n:Other SET n:Probe",
                                Map.of("id", id));
                        default -> tx.execute("MATCH (n:Probe) WHERE id(n) = $id SET n.embedding = "
                                + "CASE WHEN $drop THEN null ELSE [1.0, 2.0] END", Map.of("id", id, "drop", random.nextBoolean()));
                    }
                    if (random.nextInt(3) == 0) {
                        assertSearchIsBrute(tx, query(tx, random, ids), 1 + random.nextInt(12),
                                "round " + round + ", write " + w);
                        searches++;
                        if (VectorMatrix.ownWrites(tx, "Probe", "embedding") != null) inWriting++;
                    }
                }
                assertSearchIsBrute(tx, query(tx, random, ids), 1 + random.nextInt(12), "round " + round + " end");
                searches++;
                if (VectorMatrix.ownWrites(tx, "Probe", "embedding") != null) inWriting++;
                if (random.nextInt(4) == 0) {
                    tx.rollback();
                    rolledBack++;
                } else {
                    tx.commit();
                }
            }
            try (Transaction tx = db.beginTx()) {
                assertNull(VectorMatrix.ownWrites(tx, "Probe", "embedding"));
                assertSearchIsBrute(tx, query(tx, random, ids), 1 + random.nextInt(12), "after round " + round);
                searches++;
            }
        }
        assertNotNull(VectorMatrix.cached(db, "own_vec"));  // the copy answered, not the index
        assertTrue(inWriting > 50 && rolledBack > 10, "searches " + searches + ", in writing transactions "
                + inWriting + ", rolled back " + rolledBack);
        db.executeTransactionally("MATCH (n:Probe|Other) DETACH DELETE n");
    }

    @Test
    void integerVectorsAreFoundWithAndWithoutTheCopy() {
        db.executeTransactionally("CREATE VECTOR INDEX int_vec IF NOT EXISTS FOR (n:IntProbe) ON (n.embedding) "
                + "OPTIONS {indexConfig: {`vector.dimensions`: 3, `vector.similarity_function`: 'euclidean'}}");
        db.executeTransactionally("UNWIND range(0, 299) AS i CREATE (:IntProbe {i: i, embedding: [i, i + 1, 2 * i]})");
        db.executeTransactionally("CREATE (:IntProbe {i: -1, embedding: [1.5, 2.5, 3.5]})");
        db.executeTransactionally("CALL db.awaitIndexes(300)");
        List<Map<String, Object>> got = db.executeTransactionally(
                "CALL kgdb.nearestNodes('int_vec', [7.0, 8.0, 14.0], 2) YIELD node, distance "
                        + "RETURN node.i AS i, distance ORDER BY distance", Map.of(), r -> r.stream().toList());
        assertEquals(7L, got.get(0).get("i"));
        assertEquals(0.0, got.get(0).get("distance"));
        assertEquals(Math.sqrt(6.0), got.get(1).get("distance"));
        // and a huge integer (not a float exactly): its distance from the store
        db.executeTransactionally("CREATE (:IntProbe {i: 1000, embedding: [16777217, 0, 0]})");
        got = db.executeTransactionally("CALL kgdb.nearestNodes('int_vec', [16777217.0, 0.0, 0.0], 1) "
                + "YIELD node, distance RETURN node.i AS i, distance", Map.of(), r -> r.stream().toList());
        assertEquals(1000L, got.get(0).get("i"));
        assertEquals(0.0, got.get(0).get("distance"));
        db.executeTransactionally("MATCH (n:IntProbe) DETACH DELETE n");
        db.executeTransactionally("DROP INDEX int_vec");
    }

    /** A copy of two vector indexes, 100 rows each. */
    private static void searched(String index, String label) {
        db.executeTransactionally("CREATE VECTOR INDEX " + index + " IF NOT EXISTS FOR (n:" + label
                + ") ON (n.embedding) OPTIONS {indexConfig: {`vector.dimensions`: 2, "
                + "`vector.similarity_function`: 'euclidean'}}");
        db.executeTransactionally("UNWIND range(0, 99) AS i CREATE (:" + label + " {embedding: [i * 1.0, 0.5]})");
        db.executeTransactionally("CALL db.awaitIndexes(300)");
        assertEquals(1L, (long) db.executeTransactionally("CALL kgdb.nearestNodes($index, [3.0, 0.5], 1) "
                + "YIELD node RETURN count(node) AS n", Map.of("index", index), r -> (Long) r.next().get("n")));
        assertNotNull(VectorMatrix.cached(db, index));
    }

    @Test
    void aDroppedIndexesCopyIsFreed() throws InterruptedException {
        searched("drop_vec", "DropProbe");
        searched("drop_vec2", "DropProbe2");
        db.executeTransactionally("CALL kgdb.vectorIndexes()");  // frees the other tests' dropped copies
        int kept = VectorMatrix.kept(db);
        // freed by the server's sweep, with no kgdb call after the drop
        db.executeTransactionally("DROP INDEX drop_vec");
        long deadline = System.nanoTime() + (VectorMatrix.SWEEP_SECONDS * 4 + 10) * 1_000_000_000L;
        while (VectorMatrix.cached(db, "drop_vec") != null && System.nanoTime() < deadline) Thread.sleep(100);
        assertNull(VectorMatrix.cached(db, "drop_vec"));
        assertEquals(kept - 1, VectorMatrix.kept(db));
        assertNotNull(VectorMatrix.cached(db, "drop_vec2"));  // the other index keeps its copy
        // and by kgdb.vectorIndexes() at once (whichever comes first)
        db.executeTransactionally("DROP INDEX drop_vec2");
        assertEquals(List.of(), db.executeTransactionally("CALL kgdb.vectorIndexes() YIELD index "
                + "WHERE index STARTS WITH 'drop_vec' RETURN index", Map.of(), r -> r.stream().toList()));
        assertNull(VectorMatrix.cached(db, "drop_vec2"));
        assertEquals(kept - 2, VectorMatrix.kept(db));
        db.executeTransactionally("MATCH (n:DropProbe|DropProbe2) DETACH DELETE n");
    }

    @Test
    void cosineIsScaleSafe() {
        for (double scale : new double[] {1e-200, 1e-160, 1.0, 1e150, 1e200, Double.MIN_VALUE * 8}) {
            Object c = db.executeTransactionally("RETURN kgdb.cosine($a, $b) AS c",
                    Map.of("a", List.of(1.0 * scale, 2.0 * scale), "b", List.of(3.0 * scale, 1.0 * scale)),
                    r -> r.next().get("c"));
            assertEquals(5.0 / (Math.sqrt(5.0) * Math.sqrt(10.0)), (Double) c, 1e-12, "scale " + scale);
        }
        Object c = db.executeTransactionally("RETURN kgdb.cosine([1e-300, 0.0], [1e300, 1e300]) AS c",
                Map.of(), r -> r.next().get("c"));
        assertEquals(Math.sqrt(0.5), (Double) c, 1e-12);
        QueryExecutionException e = assertThrows(QueryExecutionException.class,
                () -> db.executeTransactionally("RETURN kgdb.cosine([0.0, 0.0], [1.0, 2.0]) AS c", Map.of(),
                        r -> r.next().get("c")));
        assertTrue(e.getMessage().contains("a vector of zeros"), e.getMessage());
    }
}
