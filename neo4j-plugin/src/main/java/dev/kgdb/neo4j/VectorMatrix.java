package dev.kgdb.neo4j;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.neo4j.common.DependencyResolver;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Transaction;
import org.neo4j.graphdb.event.LabelEntry;
import org.neo4j.graphdb.event.PropertyEntry;
import org.neo4j.graphdb.event.TransactionData;
import org.neo4j.graphdb.event.TransactionEventListener;
import org.neo4j.kernel.api.txstate.TxStateHolder;
import org.neo4j.kernel.impl.coreapi.InternalTransaction;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * Exact nearest-node search over an in-memory copy of one vector index's vectors (a float
 * matrix, the values the store holds), built on first use and kept current by a transaction
 * listener: any committed change of the indexed property, of the label, or any deleted node
 * marks the database's matrices stale and the next search rebuilds them. Exact, unlike the
 * HNSW index, so the top-k never depends on what an approximate index happened to return.
 *
 * <p>A search screens every row in float (squared L2 over a block-wise dimension-major copy,
 * which the JIT turns into SIMD loops: a few ms for 43k x 384), then recomputes the exact distance ({@link Vectors#l2}, double, index
 * order: bit-identical to the Cypher {@code reduce()}) for every row whose screened distance
 * is within a safe margin of the k-th, and returns the k nearest with any rows tied at the
 * k-th. Not used (the caller falls back to the index) when the matrix would exceed a quarter
 * of the heap, when the transaction has uncommitted writes of its own, or when the server
 * does not expose its management service.
 */
final class VectorMatrix {
    /** Screened squared distances within this relative margin of the k-th are recomputed. */
    static final double RELATIVE_MARGIN = 1e-3;
    static final double ABSOLUTE_MARGIN = 1e-5;
    /** Rows per block: a block's running sums (4 KB) stay in L1 while its columns stream. */
    static final int BLOCK = 1024;
    /** From this many blocks on, the blocks are screened on the common fork-join pool. */
    static final int PARALLEL_BLOCKS = 8;

    private static final Map<String, VectorMatrix> CACHE = new ConcurrentHashMap<>();
    private static final Map<String, AtomicLong> CHANGES = new ConcurrentHashMap<>();
    private static final Set<String> WATCHED_KEYS = ConcurrentHashMap.newKeySet();
    private static final Set<String> WATCHED_LABELS = ConcurrentHashMap.newKeySet();

    final String label;
    final String property;
    final int dim;
    final long version;
    final int rows;
    /** Column j of block b is {@code columns[b * dim + j]} ({@link #BLOCK} floats). */
    final float[][] columns;
    final long[] nodeIds;
    final double buildMs;
    /** Why there is no matrix (too large), or null. */
    final String unusable;
    /** The last search's screen and exact re-ranking times and how many rows it re-ranked. */
    volatile double lastScreenMs;
    volatile double lastExactMs;
    volatile int lastRecomputed;

    private VectorMatrix(String label, String property, int dim, long version, int rows,
                         float[][] columns, long[] nodeIds, double buildMs, String unusable) {
        this.label = label;
        this.property = property;
        this.dim = dim;
        this.version = version;
        this.rows = rows;
        this.columns = columns;
        this.nodeIds = nodeIds;
        this.buildMs = buildMs;
        this.unusable = unusable;
    }

    /** The state of one index's matrix for kgdb.vectorIndexState: null if never built. */
    static VectorMatrix cached(GraphDatabaseService db, String index) {
        return CACHE.get(db.databaseName() + "\u0000" + index);
    }

    static boolean current(GraphDatabaseService db, VectorMatrix m) {
        AtomicLong changes = CHANGES.get(db.databaseName());
        return changes != null && m.version == changes.get();
    }

    /**
     * The current matrix of {@code index} (a node vector index on {@code label}.{@code prop}
     * of {@code dim} dimensions), built if stale, or null where it cannot be used.
     */
    static VectorMatrix of(GraphDatabaseService db, Transaction tx, String index, String label,
                           String prop, int dim) {
        if (hasOwnWrites(tx)) return null;
        AtomicLong changes = listening(db, label, prop);
        if (changes == null) return null;
        String key = db.databaseName() + "\u0000" + index;
        VectorMatrix m = CACHE.get(key);
        long now = changes.get();
        if (m != null && m.version == now && m.label.equals(label) && m.property.equals(prop)
                && m.dim == dim) {
            return m.unusable == null ? m : null;
        }
        synchronized (CACHE) {
            m = CACHE.get(key);
            now = changes.get();
            if (m == null || m.version != now || !m.label.equals(label)
                    || !m.property.equals(prop) || m.dim != dim) {
                m = build(tx, label, prop, dim, now);
                CACHE.put(key, m);
            }
        }
        return m.unusable == null ? m : null;
    }

    private static boolean hasOwnWrites(Transaction tx) {
        try {
            Object ktx = ((InternalTransaction) tx).kernelTransaction();
            return !(ktx instanceof TxStateHolder h) || h.hasTxStateWithChanges();
        } catch (RuntimeException | LinkageError e) {
            return true;
        }
    }

    /** The database's change counter, with the listener that bumps it registered. */
    private static AtomicLong listening(GraphDatabaseService db, String label, String prop) {
        WATCHED_KEYS.add(prop);
        WATCHED_LABELS.add(label);
        String name = db.databaseName();
        AtomicLong changes = CHANGES.get(name);
        if (changes != null) return changes;
        synchronized (CHANGES) {
            changes = CHANGES.get(name);
            if (changes != null) return changes;
            DatabaseManagementService dbms;
            try {
                DependencyResolver resolver = ((GraphDatabaseAPI) db).getDependencyResolver();
                dbms = resolver.resolveDependency(DatabaseManagementService.class);
            } catch (RuntimeException | LinkageError e) {
                return null;
            }
            AtomicLong counter = new AtomicLong();
            dbms.registerTransactionEventListener(name, new Listener(counter));
            CHANGES.put(name, counter);
            return counter;
        }
    }

    /** Bumps the counter before a commit that may change an indexed vector. */
    private static final class Listener implements TransactionEventListener<Object> {
        private final AtomicLong counter;

        Listener(AtomicLong counter) {
            this.counter = counter;
        }

        @Override
        public Object beforeCommit(TransactionData data, Transaction transaction,
                                   GraphDatabaseService databaseService) {
            if (relevant(data)) counter.incrementAndGet();
            return null;
        }

        @Override
        public void afterCommit(TransactionData data, Object state, GraphDatabaseService db) {}

        @Override
        public void afterRollback(TransactionData data, Object state, GraphDatabaseService db) {}

        private static boolean relevant(TransactionData data) {
            if (data.deletedNodes().iterator().hasNext()) return true;
            for (PropertyEntry<Node> p : data.assignedNodeProperties()) {
                if (WATCHED_KEYS.contains(p.key())) return true;
            }
            for (PropertyEntry<Node> p : data.removedNodeProperties()) {
                if (WATCHED_KEYS.contains(p.key())) return true;
            }
            for (LabelEntry l : data.assignedLabels()) {
                if (WATCHED_LABELS.contains(l.label().name())) return true;
            }
            for (LabelEntry l : data.removedLabels()) {
                if (WATCHED_LABELS.contains(l.label().name())) return true;
            }
            return false;
        }
    }

    @SuppressWarnings("deprecation")
    private static VectorMatrix build(Transaction tx, String label, String prop, int dim,
                                      long version) {
        long t0 = System.nanoTime();
        long budget = Runtime.getRuntime().maxMemory() / 4;
        List<float[]> columns = new ArrayList<>();
        long[] ids = new long[BLOCK];
        float[] row = new float[dim];
        int n = 0;
        try (ResourceIterator<Node> nodes = tx.findNodes(Label.label(label))) {
            while (nodes.hasNext()) {
                Node node = nodes.next();
                if (!toRow(node.getProperty(prop, null), row)) continue;  // as the index: dim finite values
                int b = n / BLOCK, o = n % BLOCK;
                if (o == 0) {
                    if ((long) (b + 1) * BLOCK * dim * 4 > budget) {
                        return new VectorMatrix(label, prop, dim, version, 0, null, null,
                                (System.nanoTime() - t0) / 1e6, "more than " + (long) b * BLOCK
                                + " vectors would exceed a quarter of the heap");
                    }
                    for (int j = 0; j < dim; j++) columns.add(new float[BLOCK]);
                    if (ids.length < (b + 1) * BLOCK) ids = Arrays.copyOf(ids, ids.length * 2);
                }
                for (int j = 0; j < dim; j++) columns.get(b * dim + j)[o] = row[j];
                ids[n++] = node.getId();
            }
        }
        return new VectorMatrix(label, prop, dim, version, n, columns.toArray(new float[0][]),
                ids, (System.nanoTime() - t0) / 1e6, null);
    }

    /** The stored vector as floats into {@code row}: false unless it has row.length finite values. */
    private static boolean toRow(Object value, float[] row) {
        if (value instanceof float[] f && f.length == row.length) {
            System.arraycopy(f, 0, row, 0, row.length);
        } else if (value instanceof double[] d && d.length == row.length) {
            for (int i = 0; i < row.length; i++) row[i] = (float) d[i];
        } else {
            return false;
        }
        for (float x : row) {
            if (!Float.isFinite(x)) return false;
        }
        return true;
    }

    /** Row and exact distance of a nearest node. */
    record Hit(long nodeId, double distance) {}

    /**
     * The k rows nearest {@code query} by exact L2 (and any tied with the k-th), closest first.
     * The screen runs in float over the blocked matrix; {@code exact} gives a row's exact
     * distance (the caller reads the stored vector), computed only for the rows the screen
     * cannot rule out.
     */
    List<Hit> nearest(double[] query, int k, java.util.function.LongToDoubleFunction exact) {
        float[] q = new float[dim];
        double norm2 = 0.0;
        for (int i = 0; i < dim; i++) {
            q[i] = (float) query[i];
            norm2 += query[i] * query[i];
        }
        long t0 = System.nanoTime();
        int blocks = (rows + BLOCK - 1) / BLOCK;
        float[] screened = new float[blocks * BLOCK];
        IntStream stream = IntStream.range(0, blocks);
        (blocks >= PARALLEL_BLOCKS ? stream.parallel() : stream).forEach(b -> {
            float[] acc = new float[BLOCK];
            for (int j = 0; j < dim; j++) accumulate(columns[b * dim + j], q[j], acc);
            System.arraycopy(acc, 0, screened, b * BLOCK, BLOCK);
        });
        int kk = Math.min(k, rows);
        if (kk == 0) return List.of();
        float kth = kthSmallest(screened, rows, kk);
        double limit = kth * (1 + RELATIVE_MARGIN) + ABSOLUTE_MARGIN * (1 + norm2);
        long t1 = System.nanoTime();
        List<Hit> hits = new ArrayList<>();
        for (int r = 0; r < rows; r++) {
            if (screened[r] <= limit) hits.add(new Hit(nodeIds[r], exact.applyAsDouble(nodeIds[r])));
        }
        hits.sort((a, b) -> Double.compare(a.distance(), b.distance()));
        int end = Math.min(k, hits.size());
        while (end < hits.size() && hits.get(end).distance() == hits.get(end - 1).distance()) end++;
        lastScreenMs = (t1 - t0) / 1e6;
        lastExactMs = (System.nanoTime() - t1) / 1e6;
        lastRecomputed = hits.size();
        return hits.subList(0, end);
    }

    /**
     * One dimension of a block: acc[r] += (column[r] - q)^2. A plain element-wise loop, which
     * HotSpot's C2 compiles to SIMD instructions (the screen, not the answer).
     */
    private static void accumulate(float[] column, float q, float[] acc) {
        for (int r = 0; r < BLOCK; r++) {
            float d = column[r] - q;
            acc[r] += d * d;
        }
    }

    /** The k-th smallest value (1-based) by a bounded max-heap of the k smallest. */
    private static float kthSmallest(float[] values, int n, int k) {
        float[] heap = new float[k];
        int size = 0;
        for (int x = 0; x < n; x++) {
            float v = values[x];
            if (size < k) {
                int i = size++;
                heap[i] = v;
                while (i > 0 && heap[(i - 1) / 2] < heap[i]) {
                    float t = heap[i];
                    heap[i] = heap[(i - 1) / 2];
                    heap[(i - 1) / 2] = t;
                    i = (i - 1) / 2;
                }
            } else if (v < heap[0]) {
                heap[0] = v;
                int i = 0;
                while (true) {
                    int l = 2 * i + 1, r = l + 1, m = i;
                    if (l < k && heap[l] > heap[m]) m = l;
                    if (r < k && heap[r] > heap[m]) m = r;
                    if (m == i) break;
                    float t = heap[i];
                    heap[i] = heap[m];
                    heap[m] = t;
                    i = m;
                }
            }
        }
        return heap[0];
    }
}
