package dev.kgdb.neo4j;

import java.util.List;
import java.util.Map;

/**
 * One procedure's argument checks (the maps and lists kgdb passes as a procedure's request):
 * every failure is one line, an {@link IllegalArgumentException} naming the procedure and the
 * argument ({@code "kgdb.simgrag.match: nodes[0].name must be a string, not a Long"}), which
 * Neo4j reports to the caller as a client error, never a server failure.
 */
final class Args {
    private final String prefix;

    /** Checks for {@code procedure} (its name starts every message). */
    Args(String procedure) {
        this.prefix = procedure + ": ";
    }

    /** A failure at {@code where}: the procedure's name, then the message. */
    IllegalArgumentException fail(String message) {
        return new IllegalArgumentException(prefix + message);
    }

    /** {@code value} as a count from 1 to {@code max} (a procedure's k). */
    int count(Object value, long max, String where) {
        if (!(value instanceof Long l) || l < 1 || l > max) {
            throw fail(where + " must be an integer from 1 to " + max + ", not " + value);
        }
        return (int) (long) l;
    }

    List<?> list(Object value, String where) {
        if (!(value instanceof List<?> l)) throw fail(where + " must be a list, not " + kind(value));
        return l;
    }

    /** A list, or null where the argument is absent. */
    List<?> listOrNull(Object value, String where) {
        return value == null ? null : list(value, where);
    }

    Map<?, ?> map(Object value, String where) {
        if (!(value instanceof Map<?, ?> m)) throw fail(where + " must be a map, not " + kind(value));
        return m;
    }

    String string(Object value, String where) {
        if (!(value instanceof String s)) throw fail(where + " must be a string, not " + kind(value));
        return s;
    }

    /** A string, or null where the argument is absent. */
    String stringOrNull(Object value, String where) {
        return value == null ? null : string(value, where);
    }

    /** {@code value} as a position in a list of {@code size}. */
    int index(Object value, int size, String where) {
        if (!(value instanceof Long l) || l < 0 || l >= size) {
            throw fail(where + " must be an index from 0 to " + (size - 1) + ", not " + value);
        }
        return (int) (long) l;
    }

    private static String kind(Object value) {
        return value == null ? "null" : "a " + value.getClass().getSimpleName();
    }
}
