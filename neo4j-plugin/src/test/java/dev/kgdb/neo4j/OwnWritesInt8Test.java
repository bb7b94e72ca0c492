package dev.kgdb.neo4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@link OwnWritesTest} again with int8 copies (kgdb.vectors.copy=int8): a search is a
 * brute-force scan of what its transaction sees, its own uncommitted writes and the committed
 * writes patched into the int8 copy included. */
class OwnWritesInt8Test extends OwnWritesTest {
    @BeforeAll
    static void int8() {
        VectorMatrix.copyOverride = "int8";
    }

    @AfterAll
    static void back() {
        VectorMatrix.copyOverride = null;
    }

    @Test
    void theCopiesAreInt8() {
        db.executeTransactionally("CREATE VECTOR INDEX kind_vec IF NOT EXISTS FOR (n:KindProbe) ON (n.embedding) "
                + "OPTIONS {indexConfig: {`vector.dimensions`: 2, `vector.similarity_function`: 'euclidean'}}");
        db.executeTransactionally("UNWIND range(0, 999) AS i CREATE (:KindProbe {embedding: [i * 1.0, 0.5]})");
        db.executeTransactionally("CALL db.awaitIndexes(300)");
        assertEquals((Object) 3.0, db.executeTransactionally("CALL kgdb.nearestNodes('kind_vec', [3.0, 0.5], 1) "
                + "YIELD node RETURN node.embedding[0] AS x", Map.of(), r -> r.next().get("x")));
        assertEquals("int8", VectorMatrix.cached(db, "kind_vec").kind());
        db.executeTransactionally("MATCH (n:KindProbe) DETACH DELETE n");
        db.executeTransactionally("DROP INDEX kind_vec");
    }
}
