package dev.kgdb.neo4j;

import java.util.function.Supplier;
import org.neo4j.graphdb.NotFoundException;
import org.neo4j.internal.kernel.api.exceptions.EntityNotFoundException;

/**
 * Reads that race other transactions' deletes. Neo4j reads committed data (READ COMMITTED): a
 * node or relationship a procedure has found (through a vector copy, an index, a traversal) may
 * be deleted by another transaction's commit before the procedure reads its properties or
 * relationships, and that read throws {@link NotFoundException} ("Unable to load NODE ...").
 * Measured under kgdb's load test (a writer loading and deleting a document every second beside
 * SimGRAG searches): about 1 search in 600 failed that way, a 500 for an ordinary request.
 *
 * <p>A procedure that computes its whole answer before it returns runs again: the rerun reads
 * after the racing commit, so it no longer finds what was deleted (an answer as of a moment
 * after that commit, which READ COMMITTED allows anyway). Only a graph deleted faster than a
 * search can run fails, after {@link #ATTEMPTS} runs, with a message saying so.
 */
final class Races {
    static final int ATTEMPTS = 5;

    private Races() {}

    static <T> T rerun(String procedure, Supplier<T> body) {
        Exception last = null;
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            try {
                return body.get();
            } catch (Exception e) {  // the kernel's checked EntityNotFoundException too
                if (!deleted(e)) throw e;  // unchecked only (precise rethrow)
                last = e;
            }
        }
        throw new IllegalStateException(procedure + ": nodes it read were deleted by other "
                + "transactions in each of " + ATTEMPTS + " runs (" + last.getMessage()
                + "); retry when the writes calm down", last);
    }

    /** Whether {@code e} is (or wraps: the kernel's exception reaches a procedure inside
     * others, depending on where the read was) a read of an entity deleted meanwhile. */
    static boolean deleted(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof NotFoundException || t instanceof EntityNotFoundException) return true;
        }
        return false;
    }
}
