package dev.kgdb.neo4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

/** kgdb.simgrag.search answers while another transaction keeps creating and deleting a node it
 * finds (the load test's writer: a document's title entity loaded and deleted every second):
 * never "Unable to load NODE" (a 500 for an ordinary request before), and every subgraph it
 * returns is one of those found with or without that node (issue 35). */
class RacingDeletesTest {
    static Neo4j neo4j;
    static GraphDatabaseService db;
    static final int DIM = 8;
    static final int ENTITIES = 40;

    @BeforeAll
    static void start() {
        neo4j = Neo4jBuilders.newInProcessBuilder().withDisabledServer()
                .withFunction(Functions.class).withProcedure(Nearest.class)
                .withProcedure(SimGrag.class).withProcedure(SimGragSearch.class).build();
        db = neo4j.defaultDatabaseService();
        db.executeTransactionally("CREATE VECTOR INDEX race_vec FOR (n:Racer) ON (n.embedding) "
                + "OPTIONS {indexConfig: {`vector.dimensions`: 8, `vector.similarity_function`: 'euclidean'}}");
        List<Map<String, Object>> rows = new ArrayList<>();
        for (int i = 0; i < ENTITIES; i++) rows.add(Map.of("id", "e" + i, "v", vector(i)));
        db.executeTransactionally("UNWIND $rows AS r CREATE (:Racer {id: r.id, name: r.id, embedding: r.v})",
                Map.of("rows", rows));
        // a ring: every entity linked to the next
        db.executeTransactionally("MATCH (a:Racer), (b:Racer) WHERE toInteger(substring(b.id, 1)) = "
                + "(toInteger(substring(a.id, 1)) + 1) % $n CREATE (a)-[:LINKED]->(b)", Map.of("n", ENTITIES));
        db.executeTransactionally("CALL db.awaitIndexes(300)");
    }

    @AfterAll
    static void stop() {
        neo4j.close();
    }

    static List<Double> vector(int i) {
        List<Double> v = new ArrayList<>();
        for (int d = 0; d < DIM; d++) v.add(Math.sin(i * 0.7 + d) * (1 + i % 3));
        return v;
    }

    static Map<String, Object> request(long kn) {
        Map<String, Object> search = Map.of("index", "race_vec", "key", "id", "shown", "name", "k", kn,
                "vectors", List.of(vector(0)));
        Map<String, Object> open = new HashMap<>();
        open.put("candidates", null);
        Map<String, Object> component = Map.of("label", "Racer", "anchor", 0L, "order", List.of(0L),
                "nodes", List.of(Map.of("candidates", Map.of("search", 0L, "query", 0L)), open),
                "edges", List.of(Map.of("source", 0L, "target", 1L, "directed", false)),
                "differ", List.of(List.of(true, true), List.of(true, true)));
        return Map.of("searches", List.of(search), "components", List.of(component));
    }

    /** The subgraphs found, each as "gsd triples", sorted: subgraphs at one GSD come in the
     * order the relationships are read, which the racer's new internal ids change. */
    @SuppressWarnings("unchecked")
    static List<String> subgraphs(String call, Map<String, Object> params) {
        List<Map<String, Object>> rows = db.executeTransactionally(call, params,
                r -> (List<Map<String, Object>>) r.next().get("subgraphs"));
        List<String> out = new ArrayList<>();
        for (Map<String, Object> row : rows) out.add(row.get("gsd") + " " + row.get("triples"));
        java.util.Collections.sort(out);
        return out;
    }

    @Test
    void searchesRacingDeletesAnswerFromOneState() throws Exception {
        String call = "CALL kgdb.simgrag.search($r, 5) YIELD subgraphs RETURN subgraphs";
        Map<String, Object> params = Map.of("r", request(ENTITIES + 5L));
        List<String> without = subgraphs(call, params);
        // the racer: as near the query as e0, linked to it, created and deleted over and over
        String create = "MATCH (e:Racer {id: 'e0'}) CREATE (x:Racer {id: 'x', name: 'x', embedding: $v})"
                + "-[:LINKED]->(e)";
        db.executeTransactionally(create, Map.of("v", vector(0)));
        List<String> with = subgraphs(call, params);
        db.executeTransactionally("MATCH (x:Racer {id: 'x'}) DETACH DELETE x");
        String racer = "0.0 [[x, LINKED, e0]]";
        assertTrue(with.contains(racer) && !without.contains(racer), with + " / " + without);

        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong writes = new AtomicLong();
        AtomicReference<Throwable> writerFailed = new AtomicReference<>();
        Thread writer = new Thread(() -> {
            try {
                while (!stop.get()) {
                    db.executeTransactionally(create, Map.of("v", vector(0)));
                    db.executeTransactionally("MATCH (x:Racer {id: 'x'}) DETACH DELETE x");
                    writes.addAndGet(2);
                }
            } catch (Throwable t) {
                writerFailed.set(t);
            }
        });
        writer.start();
        int searches = 0, withRacer = 0;
        List<String> failures = new ArrayList<>();
        long end = System.nanoTime() + 30_000_000_000L;  // or 400 writes, whichever first
        try {
            while (System.nanoTime() < end && writes.get() < 400) {
                searches++;
                try {
                    List<String> got = subgraphs(call, params);
                    if (got.contains(racer)) withRacer++;
                    // READ COMMITTED: the candidate search and the matching may read either
                    // side of a commit, so an answer may mix the two states' subgraphs, but
                    // holds no other
                    for (String subgraph : got) {
                        if (!with.contains(subgraph) && !without.contains(subgraph)) {
                            failures.add("in neither state: " + subgraph + " of " + got);
                        }
                    }
                } catch (RuntimeException e) {
                    failures.add(String.valueOf(e.getMessage()));
                }
            }
        } finally {
            stop.set(true);
            writer.join(10_000);
        }
        assertEquals(List.of(), failures.subList(0, Math.min(3, failures.size())),
                failures.size() + " of " + searches + " searches failed; with the racer " + with
                        + ", without " + without);
        assertEquals(null, writerFailed.get());
        assertTrue(writes.get() >= 100, "the writer wrote " + writes.get() + " times");
        assertTrue(searches > 100, searches + " searches");
        System.out.printf("racing deletes: %d searches (%d with the racer), %d writes%n",
                searches, withRacer, writes.get());
    }
}
