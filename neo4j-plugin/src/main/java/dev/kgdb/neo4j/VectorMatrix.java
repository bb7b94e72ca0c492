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
 * listener: every committed write that changes a watched property or label, or deletes a node,
 * is logged with the ids of the nodes it touched, and the next search patches the matrix
 * (see {@link #patched}): the touched nodes' rows are retired and their current vectors
 * appended, projected on the axes already computed (any orthonormal axes keep the bound
 * exact). A full rebuild happens only when the log no longer covers the matrix's version, when
 * the writes touched more than {@link #PATCH_SHARE} of its rows, or when retired rows would
 * exceed that share. Exact, unlike the HNSW index, so the top-k never depends on what an
 * approximate index happened to return.
 *
 * <p>Lower-bound screening: at build time the principal axes of the vectors (the top
 * {@link #screenDims} eigenvectors of their covariance, an orthonormal basis P) are computed,
 * and each row keeps, in a small block-wise dimension-major array, its coordinates P(x - mean)
 * and the norm of its residual (I - P'P)(x - mean). Since distances are invariant under
 * rotation, |x - q|^2 = |P(x - q)|^2 + |residual(x - q)|^2 >= |P(x - q)|^2 + (|res x| - |res
 * q|)^2: a lower bound from m + 1 floats per row instead of dim; the same holds for the first
 * m1 axes with the residual outside them. The screen has two stages: a search scans the first
 * (m1 + 1 floats per row, column-major; SIMD loops) for every row, takes the full float
 * distance of the k rows with the smallest bounds, then goes through rows in increasing
 * first-stage bound order, stops when the next bound exceeds the current k-th distance (with
 * safe margins), skips a row whose second-stage bound (all m axes: the rest of its
 * coordinates, row-major) exceeds it, and computes the others' full float distance (row-major
 * copy); at 919k rows one stage of all m axes was a 710 MB scan per query (memory-bound).
 * Then the exact distance ({@link Vectors#l2}, double, index
 * order: bit-identical to the Cypher {@code reduce()}) is computed for every visited row within
 * a safe margin of the k-th, and the k nearest are returned with any rows tied at the k-th.
 * The exact distance comes from the copy where the stored values are floats (kgdb stores
 * MiniLM's float32 outputs as doubles: the copy holds them exactly, and the double arithmetic
 * over them is the same), else from the vector read from the store. A vector is any list of
 * {@code dim} finite numbers (floats, or integers as Cypher stores {@code [1, 2, 3]}). The copy
 * is of committed data; a search in a transaction that has written to the label or the
 * property leaves out the rows of the nodes it touched and reads those nodes as the
 * transaction sees them ({@link #ownWrites}). Copies and change logs are kept per server
 * ({@link #SERVERS}). Large copies are int8 ({@link Int8Rows}: {@link #COPY_SETTING}, auto by
 * default: float32 while it fits {@link #HEAP_SHARE_SETTING} of the heap). Not used (the caller
 * falls back to the index) when even the int8 copy would exceed that share of the heap, or when
 * the server does not expose its management service. A
 * dropped index's copy is freed within {@link #SWEEP_SECONDS} by a job on the server's
 * scheduler ({@link #sweep}), or at once by kgdb.vectorIndexes() ({@link #forgetDropped}).
 */
final class VectorMatrix {
    /** Screened squared distances within this relative margin of the k-th are recomputed. */
    static final double RELATIVE_MARGIN = 1e-3;
    static final double ABSOLUTE_MARGIN = 1e-5;
    /** Rows per block: a block's running sums (4 KB) stay in L1 while its columns stream. */
    static final int BLOCK = 1024;
    /** From this many blocks on, the blocks are screened on the common fork-join pool. */
    static final int PARALLEL_BLOCKS = 8;
    /** Principal axes screened (at most half the dimensions). MiniLM's spectrum is flat (48
     * axes hold 50% of the variance of MetaQA's 43k names, 128 hold 79%, 192 hold 91%): with 192
     * the bound leaves about 0.2% of the rows to visit (median; 1% at p90), with 48 it leaves 80%. */
    static final int SCREEN_DIMS = 192;
    /** From this many rows on, the screen has two stages (the first m1 = ceil(m / 2) axes for
     * every row, the rest only for the rows they leave); below, one stage of all m axes (m1 =
     * m). At 919k rows one stage was a 710 MB scan per query (142 ms; two stages 27 ms); on
     * MetaQA's 43k names the half-axes bound left 14,960 of 43,234 rows to the second stage in
     * the one query looked at, and the searches in the server took 2.7-4.6 ms p50 against
     * 2.1-2.9 with one stage. Not final: the
     * JUnit suite checks both kinds on small matrices. */
    static volatile int twoStageRows = 131_072;
    /** Matrices of at most this many rows are searched without the screen (every row exact). */
    static final int SMALL = 256;
    /** Rows of the sample the covariance is estimated from, and subspace iterations. */
    static final int SAMPLE = 4096;
    static final int ITERATIONS = 25;
    /** Writes touching more than this share of a matrix's rows (or leaving more retired rows)
     * rebuild it instead of patching it. */
    static final double PATCH_SHARE = 0.25;
    /** The change log keeps at most this many node ids (older writes are forgotten: a matrix
     * older than the log is rebuilt). */
    static final int LOG_IDS = 1 << 20;

    /** JVM system property choosing the kind of copy ({@code -D} on the server's command line,
     * or {@code server.jvm.additional=-Dkgdb.vectors.copy=int8} in neo4j.conf): {@code float32}
     * (the float copy with its screen), {@code int8} ({@link Int8Rows}: a fifth of the memory at
     * 384 dimensions, exact distances re-ranked from the store) or {@code auto} (the default:
     * float32 while it fits {@link #HEAP_SHARE_SETTING} of the heap, int8 beyond). */
    static final String COPY_SETTING = "kgdb.vectors.copy";
    /** The share of the heap ({@code -Xmx}) a copy may take, 0.25 unless set (0 < share <= 0.9). */
    static final String HEAP_SHARE_SETTING = "kgdb.vectors.heap_share";
    /** An int8 search re-ranks this many times k rows from the store (at least 64), and at most
     * as many again to prove its answer exact; 4 unless set (1 to 64). */
    static final String RERANK_SETTING = "kgdb.vectors.int8.rerank";
    /** The tests' choice of {@link #COPY_SETTING} (null: the system property). */
    static volatile String copyOverride;

    static String copyMode() {
        String v = copyOverride != null ? copyOverride : System.getProperty(COPY_SETTING, "auto");
        String mode = v.trim().toLowerCase(java.util.Locale.ROOT);
        if (mode.equals("auto") || mode.equals("float32") || mode.equals("int8")) return mode;
        throw new IllegalArgumentException("kgdb: " + COPY_SETTING + " must be auto, float32 or int8, not '"
                + v + "'");
    }

    static double heapShare() {
        String v = System.getProperty(HEAP_SHARE_SETTING, "0.25");
        try {
            double share = Double.parseDouble(v.trim());
            if (share > 0 && share <= 0.9) return share;
        } catch (NumberFormatException e) {
            // the one-line error below
        }
        throw new IllegalArgumentException("kgdb: " + HEAP_SHARE_SETTING + " must be a number in (0, 0.9], not '"
                + v + "'");
    }

    static int rerankFactor() {
        String v = System.getProperty(RERANK_SETTING, "4");
        try {
            int f = Integer.parseInt(v.trim());
            if (f >= 1 && f <= 64) return f;
        } catch (NumberFormatException e) {
            // the one-line error below
        }
        throw new IllegalArgumentException("kgdb: " + RERANK_SETTING + " must be an integer from 1 to 64, not '"
                + v + "'");
    }

    /** The heap a copy may take, in bytes. */
    static long budget() {
        return (long) (Runtime.getRuntime().maxMemory() * heapShare());
    }

    /** Each server's copies and change logs, by its management service (one per JVM in a
     * server; several in one JVM under the test harness, each with its own "neo4j": keyed by
     * name alone, a second server would share the first's copies and log, and its writes,
     * logged by a listener registered only on the first, would leave its copies stale). Weak:
     * a closed server's copies go with it. */
    private static final Map<DatabaseManagementService, Server> SERVERS =
            java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());
    private static final Set<String> WATCHED_KEYS = ConcurrentHashMap.newKeySet();
    private static final Set<String> WATCHED_LABELS = ConcurrentHashMap.newKeySet();

    final String label;
    final String property;
    final int dim;
    final long version;
    final int rows;
    /** Row r is {@code data[r / BLOCK][(r % BLOCK) * dim ...]} (floats, row-major). */
    final float[][] data;
    /** Screened axes m, in two stages. The first m1 = ceil(m / 2) axes (the leading ones:
     * the subspace iteration's Gram-Schmidt keeps them nested) are scanned for every row:
     * block b holds column j (j < m1: P(x - mean)_j; j = m1: the norm of the residual outside
     * those m1 axes) of its rows at {@code screen[b][j * BLOCK ...]}. */
    final int screenDims;
    final int firstDims;
    final float[][] screen;
    /** The second stage, row-major (m - m1 + 1 floats per row, contiguous): row r's coordinates
     * on axes m1 .. m - 1 and the norm of its residual outside all m axes, at {@code
     * tail[r / BLOCK][(r % BLOCK) * (m - m1 + 1) ...]}; read only for rows the first stage
     * leaves (a quarter of the floats of a full row). */
    final float[][] tail;
    final double[] mean;
    /** m orthonormal rows of dim values (the principal axes). */
    final double[][] axes;
    final long[] nodeIds;
    /** Rows whose stored values are not all floats (a double the float copy rounds): their
     * exact distance is read from the store; every other row's comes from the copy. */
    final java.util.BitSet rounded;
    /** Retired rows (their node was changed, deleted or lost the label since the build): their
     * first-stage residual is +infinity, so no bound lets them through. */
    final java.util.BitSet retired;
    /** Rows not retired. */
    final int live;
    /** The full build's time; patches since it and the last one's time. */
    final double buildMs;
    final int patches;
    final double lastPatchMs;
    /** Why there is no matrix (too large), or null. */
    final String unusable;
    /** The int8 copy, or null where the rows are floats ({@link #data}). */
    final Int8Rows int8;
    /** Whether the last int8 search proved its answer exact (always true for float copies). */
    volatile boolean lastProved = true;
    /** The last search's screen and exact re-ranking times, how many rows it re-ranked from the
     * store, and how many rows' full float distance it computed. */
    volatile double lastScreenMs;
    volatile double lastExactMs;
    volatile int lastRecomputed;
    volatile int lastCandidates;
    volatile int lastFromStore;
    /** Rows the last search's second stage bounded (its first stage left them). */
    volatile int lastScreened;

    private VectorMatrix(String label, String property, int dim, long version, int rows,
                         float[][] data, int screenDims, float[][] screen, float[][] tail,
                         double[] mean, double[][] axes, long[] nodeIds, java.util.BitSet rounded,
                         java.util.BitSet retired, double buildMs, int patches, double lastPatchMs,
                         String unusable, Int8Rows int8) {
        this.label = label;
        this.property = property;
        this.dim = dim;
        this.version = version;
        this.rows = rows;
        this.data = data;
        this.screenDims = screenDims;
        this.firstDims = screen.length == 0 ? 0 : screen[0].length / BLOCK - 1;
        this.screen = screen;
        this.tail = tail;
        this.mean = mean;
        this.axes = axes;
        this.nodeIds = nodeIds;
        this.rounded = rounded;
        this.retired = retired;
        this.live = rows - retired.cardinality();
        this.buildMs = buildMs;
        this.patches = patches;
        this.lastPatchMs = lastPatchMs;
        this.unusable = unusable;
        this.int8 = int8;
    }

    /** The kind of copy: float32 or int8. */
    String kind() {
        return int8 != null ? "int8" : "float32";
    }

    /** Bytes this copy holds (rows, screen, node ids). */
    long bytes() {
        long ids = nodeIds == null ? 0 : 8L * nodeIds.length;
        if (int8 != null) return int8.bytes() + ids;
        long floats = 0;
        for (float[][] part : new float[][][] {data, screen, tail}) {
            if (part == null) continue;
            for (float[] blk : part) floats += blk == null ? 0 : blk.length;
        }
        return 4 * floats + ids;
    }

    private static VectorMatrix tooLarge(String label, String prop, int dim, long version,
                                         long t0, String why) {
        return new VectorMatrix(label, prop, dim, version, 0, null, 0, new float[0][], null, null,
                null, null, null, new java.util.BitSet(), (System.nanoTime() - t0) / 1e6, 0, 0, why, null);
    }

    /** The state of one index's matrix for kgdb.vectorIndexState: null if never built. */
    static VectorMatrix cached(GraphDatabaseService db, String index) {
        Server server = server(db);
        return server == null ? null : server.copies.get(db.databaseName() + "\u0000" + index);
    }

    static boolean current(GraphDatabaseService db, VectorMatrix m) {
        Server server = server(db);
        Changes changes = server == null ? null : server.changes.get(db.databaseName());
        return changes != null && m.version == changes.version.get();
    }

    /** Seconds between two sweeps of a server's copies for dropped indexes ({@link #sweep}). */
    static final long SWEEP_SECONDS = 5;

    /** One server's copies (by database name and index name) and change logs (by database). */
    private static final class Server {
        final Map<String, VectorMatrix> copies = new ConcurrentHashMap<>();
        final Map<String, Changes> changes = new ConcurrentHashMap<>();
    }

    /** The server {@code db} belongs to, or null where it does not expose its management
     * service (then there is no copy: searches use the index). A new one is swept for the
     * copies of dropped indexes every {@link #SWEEP_SECONDS} on the server's job scheduler
     * (the job ends with the server). */
    private static Server server(GraphDatabaseService db) {
        DatabaseManagementService dbms;
        DependencyResolver resolver;
        try {
            resolver = ((GraphDatabaseAPI) db).getDependencyResolver();
            dbms = resolver.resolveDependency(DatabaseManagementService.class);
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
        Server server = SERVERS.get(dbms);
        if (server != null) return server;
        synchronized (SERVERS) {
            server = SERVERS.get(dbms);
            if (server != null) return server;
            Server created = new Server();
            try {
                org.neo4j.scheduler.JobScheduler jobs = resolver.resolveDependency(
                        org.neo4j.scheduler.JobScheduler.class);
                jobs.scheduleRecurring(org.neo4j.scheduler.Group.INDEX_CLEANUP,
                        () -> sweep(dbms, created), SWEEP_SECONDS, SWEEP_SECONDS,
                        java.util.concurrent.TimeUnit.SECONDS);
            } catch (RuntimeException | LinkageError e) {
                // no scheduler: the next kgdb call on a database frees its dropped copies
            }
            SERVERS.put(dbms, created);
            return created;
        }
    }

    /** Frees the copies of {@code server} whose index is gone (dropped, or its database). */
    private static void sweep(DatabaseManagementService dbms, Server server) {
        java.util.Set<String> names = new java.util.HashSet<>();
        for (String key : server.copies.keySet()) names.add(key.substring(0, key.indexOf('\u0000')));
        for (String name : names) {
            try {
                GraphDatabaseService db = dbms.database(name);
                try (Transaction tx = db.beginTx()) {
                    forgetDropped(server, name, tx);
                }
            } catch (org.neo4j.dbms.api.DatabaseNotFoundException e) {
                String prefix = name + "\u0000";
                server.copies.keySet().removeIf(k -> k.startsWith(prefix));
            } catch (RuntimeException e) {
                // stopped or shutting down: the next sweep or call
            }
        }
    }

    /**
     * The current matrix of {@code index} (a node vector index on {@code label}.{@code prop}
     * of {@code dim} dimensions), built if stale, or null where it cannot be used. The matrix
     * holds committed data: where {@code tx} has written to the label or the property ({@code
     * own}: {@link #ownWrites}, not null), a stale
     * one is built or patched in a transaction of its own (on another thread), and the caller
     * adds the nodes {@code tx} touched ({@link #ownWrites}).
     */
    static VectorMatrix of(GraphDatabaseService db, Transaction tx, long[] own, String index,
                           String label, String prop, int dim) {
        copyMode();  // a bad setting fails every search, not only the next build
        Server server = server(db);
        if (server == null) return null;
        Changes changes = listening(server, db, label, prop);
        String key = db.databaseName() + "\u0000" + index;
        VectorMatrix m = server.copies.get(key);
        long now = changes.version.get();
        if (m != null && m.version == now && m.label.equals(label) && m.property.equals(prop)
                && m.dim == dim) {
            return m.unusable == null ? m : null;
        }
        if (own == null) {
            m = refresh(server, tx, changes, key, label, prop, dim);
        } else {
            java.util.concurrent.FutureTask<VectorMatrix> task = new java.util.concurrent.FutureTask<>(() -> {
                try (Transaction committed = db.beginTx()) {
                    return refresh(server, committed, changes, key, label, prop, dim);
                }
            });
            Thread worker = new Thread(task, "kgdb-vector-matrix");
            worker.setDaemon(true);
            worker.start();
            try {
                m = task.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } catch (java.util.concurrent.ExecutionException e) {
                if (e.getCause() instanceof RuntimeException r) throw r;
                throw new IllegalStateException("kgdb: the vector copy could not be built", e.getCause());
            }
        }
        return m.unusable == null ? m : null;
    }

    /** The matrix of {@code key} brought to the change log's version, read through {@code tx}
     * (which has not written to the label or the property: it sees their committed data). */
    private static VectorMatrix refresh(Server server, Transaction tx, Changes changes, String key,
                                        String label, String prop, int dim) {
        synchronized (server) {
            VectorMatrix m = server.copies.get(key);
            long now = changes.version.get();
            boolean same = m != null && m.label.equals(label) && m.property.equals(prop)
                    && m.dim == dim;
            if (!same || m.version != now) {
                long[] touched = same && m.unusable == null && (m.screenDims > 0 || m.int8 != null)
                        ? changes.since(m.version, now) : null;
                VectorMatrix patched = touched == null ? null : m.patched(tx, touched, now);
                m = patched != null ? patched : build(tx, label, prop, dim, now);
                server.copies.put(key, m);
            }
            return m;
        }
    }

    /**
     * The nodes whose row in the copy may not be what {@code tx} sees, ascending: those it has
     * deleted, given or taken {@code label} (created nodes of the label among them), or whose
     * {@code prop} it has set or removed, and not yet committed; null when there are none (its
     * other writes, to other labels, properties or relationships, leave the copy as it sees
     * it). The kernel's transaction state is not public API (Neo4j 5.26's TxStateHolder): if
     * it cannot be read, {@link #EVERYTHING} (the caller scans every node in {@code tx}).
     */
    static long[] ownWrites(Transaction tx, String label, String prop) {
        try {
            org.neo4j.kernel.api.KernelTransaction ktx = ((InternalTransaction) tx).kernelTransaction();
            if (!(ktx instanceof TxStateHolder h)) return EVERYTHING;
            if (!h.hasTxStateWithChanges()) return null;
            org.neo4j.kernel.api.txstate.TransactionState state = h.txState();
            int labelId = ktx.tokenRead().nodeLabel(label);
            int keyId = ktx.tokenRead().propertyKey(prop);
            org.eclipse.collections.api.set.primitive.MutableLongSet ids =
                    new org.eclipse.collections.impl.set.mutable.primitive.LongHashSet();
            ids.addAll(state.addedAndRemovedNodes().getRemoved());
            if (labelId >= 0) {
                org.neo4j.collection.diffset.LongDiffSets relabelled = state.nodesWithLabelChanged(labelId);
                ids.addAll(relabelled.getAdded());
                ids.addAll(relabelled.getRemoved());
            }
            if (keyId >= 0) {
                for (org.neo4j.storageengine.api.txstate.NodeState node : state.modifiedNodes()) {
                    if (node.isPropertyAdded(keyId) || node.isPropertyChangedOrRemoved(keyId)) {
                        ids.add(node.getId());
                    }
                }
            }
            return ids.isEmpty() ? null : ids.toSortedArray();
        } catch (RuntimeException | LinkageError e) {
            return EVERYTHING;
        }
    }

    /** What {@link #ownWrites} returns when it cannot tell: the caller scans every node. */
    static final long[] EVERYTHING = new long[0];

    /** Frees the copies of {@code db}'s indexes that {@code tx} no longer sees (dropped). */
    static void forgetDropped(GraphDatabaseService db, Transaction tx) {
        Server server = server(db);
        if (server != null) forgetDropped(server, db.databaseName(), tx);
    }

    private static void forgetDropped(Server server, String name, Transaction tx) {
        String prefix = name + "\u0000";
        boolean any = false;
        for (String key : server.copies.keySet()) any |= key.startsWith(prefix);
        if (!any) return;
        Set<String> live = new java.util.HashSet<>();
        for (org.neo4j.graphdb.schema.IndexDefinition d : tx.schema().getIndexes()) {
            if (d.getIndexType() == org.neo4j.graphdb.schema.IndexType.VECTOR && !d.isRelationshipIndex()) {
                live.add(d.getName());
            }
        }
        server.copies.keySet().removeIf(k -> k.startsWith(prefix)
                && !live.contains(k.substring(prefix.length())));
    }

    /** How many copies this database's server keeps (all its databases): for the tests. */
    static int kept(GraphDatabaseService db) {
        Server server = server(db);
        return server == null ? 0 : server.copies.size();
    }

    /** The database's change log, with the listener that writes it registered. */
    private static Changes listening(Server server, GraphDatabaseService db, String label, String prop) {
        WATCHED_KEYS.add(prop);
        WATCHED_LABELS.add(label);
        String name = db.databaseName();
        Changes changes = server.changes.get(name);
        if (changes != null) return changes;
        synchronized (server.changes) {
            changes = server.changes.get(name);
            if (changes != null) return changes;
            DatabaseManagementService dbms =
                    ((GraphDatabaseAPI) db).getDependencyResolver().resolveDependency(DatabaseManagementService.class);
            Changes created = new Changes();
            dbms.registerTransactionEventListener(name, new Listener(created));
            server.changes.put(name, created);
            return created;
        }
    }

    /**
     * One database's version (the number of logged writes) and the ids of the nodes each of
     * the recent ones touched. A write is logged after it commits: a search that reads the
     * version it makes current then also reads its data (before, a search between the version
     * and the commit could have kept the old vectors under the new version).
     */
    static final class Changes {
        final AtomicLong version = new AtomicLong();
        /** The touched ids of versions first .. version, oldest first. */
        private final java.util.ArrayDeque<long[]> log = new java.util.ArrayDeque<>();
        private long first = 1;
        private long logged;

        synchronized void committed(long[] touched) {
            if (touched.length > LOG_IDS) {
                log.clear();
                logged = 0;
                first = version.get() + 2;  // no matrix can be patched across this write
            } else {
                log.addLast(touched);
                logged += touched.length;
                while (logged > LOG_IDS) {
                    logged -= log.removeFirst().length;
                    first++;
                }
            }
            version.incrementAndGet();
        }

        /** The ids touched by the writes after {@code since} up to {@code upTo}, or null if
         * the log has forgotten some of them. */
        synchronized long[] since(long since, long upTo) {
            if (since + 1 < first || upTo > version.get()) return null;
            List<long[]> entries = new ArrayList<>(log).subList((int) (since + 1 - first),
                    (int) (upTo + 1 - first));
            long[] out = new long[entries.stream().mapToInt(ids -> ids.length).sum()];
            int at = 0;
            for (long[] ids : entries) {
                System.arraycopy(ids, 0, out, at, ids.length);
                at += ids.length;
            }
            return out;
        }
    }

    /** Logs each committed write that may change an indexed vector, with the nodes it touched. */
    private static final class Listener implements TransactionEventListener<long[]> {
        private final Changes changes;

        Listener(Changes changes) {
            this.changes = changes;
        }

        @Override
        @SuppressWarnings("deprecation")
        public long[] beforeCommit(TransactionData data, Transaction transaction,
                                   GraphDatabaseService databaseService) {
            java.util.Set<Long> ids = new java.util.HashSet<>();
            for (Node n : data.deletedNodes()) ids.add(n.getId());
            for (PropertyEntry<Node> p : data.assignedNodeProperties()) {
                if (WATCHED_KEYS.contains(p.key())) ids.add(p.entity().getId());
            }
            for (PropertyEntry<Node> p : data.removedNodeProperties()) {
                if (WATCHED_KEYS.contains(p.key())) ids.add(p.entity().getId());
            }
            for (LabelEntry l : data.assignedLabels()) {
                if (WATCHED_LABELS.contains(l.label().name())) ids.add(l.node().getId());
            }
            for (LabelEntry l : data.removedLabels()) {
                if (WATCHED_LABELS.contains(l.label().name())) ids.add(l.node().getId());
            }
            return ids.isEmpty() ? null : ids.stream().mapToLong(Long::longValue).toArray();
        }

        @Override
        public void afterCommit(TransactionData data, long[] touched, GraphDatabaseService db) {
            if (touched != null) changes.committed(touched);
        }

        @Override
        public void afterRollback(TransactionData data, long[] touched, GraphDatabaseService db) {}
    }

    /**
     * This matrix after writes that touched the nodes {@code touched} (ids, any order, maybe
     * of other labels), at {@code version}; null where a rebuild is due (too many rows touched
     * or retired). Copy on write: the blocks that change are copied, the others shared, so
     * searches running on this matrix are not disturbed. Each touched node's row is retired;
     * the node's current vector (if it still has the label and a valid one) is appended, its
     * screen columns computed on this matrix's mean and axes. Exact whatever the axes: the
     * bound holds for any orthonormal axes and any mean; only how many rows it rules out
     * depends on them.
     */
    @SuppressWarnings("deprecation")
    VectorMatrix patched(Transaction tx, long[] touched, long newVersion) {
        long t0 = System.nanoTime();
        if (touched.length > PATCH_SHARE * rows) return null;
        long[] sorted = touched.clone();
        Arrays.sort(sorted);
        if (int8 != null) return patchedInt8(tx, sorted, newVersion, t0);
        java.util.BitSet nowRetired = (java.util.BitSet) retired.clone();
        float[][] newScreen = screen.clone();
        java.util.BitSet copied = new java.util.BitSet();
        int m1 = firstDims;
        for (int r = 0; r < rows; r++) {
            if (!nowRetired.get(r) && Arrays.binarySearch(sorted, nodeIds[r]) >= 0) {
                nowRetired.set(r);
                int b = r / BLOCK;
                if (!copied.get(b)) {
                    newScreen[b] = newScreen[b].clone();
                    copied.set(b);
                }
                newScreen[b][m1 * BLOCK + r % BLOCK] = Float.POSITIVE_INFINITY;
            }
        }
        // the touched nodes as they are now: appended after the last row
        List<float[]> added = new ArrayList<>();
        List<Long> addedIds = new ArrayList<>();
        java.util.BitSet addedRounded = new java.util.BitSet();
        Label wanted = Label.label(label);
        long previous = Long.MIN_VALUE;
        for (long id : sorted) {
            if (id == previous) continue;
            previous = id;
            Node node;
            try {
                node = tx.getNodeById(id);
            } catch (org.neo4j.graphdb.NotFoundException e) {
                continue;  // deleted
            }
            Object stored = committed(node, wanted, property);
            if (stored == GONE) continue;
            float[] row = new float[dim];
            if (!toRow(stored, row)) continue;
            if (!floatValued(stored, row)) addedRounded.set(added.size());
            added.add(row);
            addedIds.add(id);
        }
        int n = rows + added.size();
        if (nowRetired.cardinality() > PATCH_SHARE * n) return null;
        int blocks = (n + BLOCK - 1) / BLOCK;
        if ((long) blocks * BLOCK * (dim + screenDims + 2) * 4 > budget()) {
            return null;  // the rebuild decides whether the copy still fits
        }
        float[][] newData = Arrays.copyOf(data, blocks);
        newScreen = Arrays.copyOf(newScreen, blocks);
        float[][] newTail = Arrays.copyOf(tail, blocks);
        long[] ids = Arrays.copyOf(nodeIds, Math.max(nodeIds.length, n));
        java.util.BitSet nowRounded = (java.util.BitSet) rounded.clone();
        java.util.BitSet grown = new java.util.BitSet();
        for (int i = 0; i < added.size(); i++) {
            int r = rows + i, b = r / BLOCK;
            if (!grown.get(b)) {
                newData[b] = b < data.length ? data[b].clone() : new float[BLOCK * dim];
                grown.set(b);
            }
            System.arraycopy(added.get(i), 0, newData[b], (r % BLOCK) * dim, dim);
            ids[r] = addedIds.get(i);
            if (addedRounded.get(i)) nowRounded.set(r);
        }
        int width = screenDims - m1 + 1;
        for (int b = grown.nextSetBit(0); b >= 0; b = grown.nextSetBit(b + 1)) {
            newScreen[b] = new float[(m1 + 1) * BLOCK];
            newTail[b] = new float[width * BLOCK];
            projectBlock(newData[b], Math.min(BLOCK, n - b * BLOCK), dim, mean, axes, m1,
                    newScreen[b], newTail[b]);
            for (int r = nowRetired.nextSetBit(b * BLOCK); r >= 0 && r < (b + 1) * BLOCK;
                 r = nowRetired.nextSetBit(r + 1)) {
                newScreen[b][m1 * BLOCK + r % BLOCK] = Float.POSITIVE_INFINITY;
            }
        }
        return new VectorMatrix(label, property, dim, newVersion, n, newData, screenDims,
                newScreen, newTail, mean, axes, ids, nowRounded, nowRetired, buildMs,
                patches + 1, (System.nanoTime() - t0) / 1e6, null, null);
    }

    /** {@link #patched} for an int8 copy: the touched rows retired (their norm +infinity), the
     * nodes' current vectors encoded on this copy's quantizer and appended (a value outside its
     * ranges is clipped: its error bound grows, the search stays exact). */
    @SuppressWarnings("deprecation")
    private VectorMatrix patchedInt8(Transaction tx, long[] sorted, long newVersion, long t0) {
        java.util.BitSet nowRetired = (java.util.BitSet) retired.clone();
        float[][] newNorm = int8.norm.clone();
        java.util.BitSet copied = new java.util.BitSet();
        for (int r = 0; r < rows; r++) {
            if (!nowRetired.get(r) && Arrays.binarySearch(sorted, nodeIds[r]) >= 0) {
                nowRetired.set(r);
                int b = r / BLOCK;
                if (!copied.get(b)) {
                    newNorm[b] = newNorm[b].clone();
                    copied.set(b);
                }
                newNorm[b][r % BLOCK] = Float.POSITIVE_INFINITY;
            }
        }
        List<double[]> added = new ArrayList<>();
        List<Long> addedIds = new ArrayList<>();
        Label wanted = Label.label(label);
        float[] row = new float[dim];
        long previous = Long.MIN_VALUE;
        for (long id : sorted) {
            if (id == previous) continue;
            previous = id;
            Node node;
            try {
                node = tx.getNodeById(id);
            } catch (org.neo4j.graphdb.NotFoundException e) {
                continue;  // deleted
            }
            Object stored = committed(node, wanted, property);
            if (stored == GONE) continue;
            double[] x = valuesOf(stored, row);
            if (x == null) continue;
            added.add(x);
            addedIds.add(id);
        }
        int n = rows + added.size();
        if (nowRetired.cardinality() > PATCH_SHARE * n) return null;
        int blocks = (n + BLOCK - 1) / BLOCK;
        if ((long) blocks * BLOCK * Int8Rows.rowBytes(dim) > budget()) return null;
        int old = int8.codes.length;
        byte[][] newCodes = Arrays.copyOf(int8.codes, blocks);
        newNorm = Arrays.copyOf(newNorm, blocks);
        float[][] newErr = Arrays.copyOf(int8.err, blocks);
        long[] ids = Arrays.copyOf(nodeIds, Math.max(nodeIds.length, blocks * BLOCK));
        java.util.BitSet grown = new java.util.BitSet();
        for (int i = 0; i < added.size(); i++) {
            int r = rows + i, b = r / BLOCK;
            if (!grown.get(b)) {
                newCodes[b] = b < old ? int8.codes[b].clone() : new byte[BLOCK * dim];
                newNorm[b] = b < old ? newNorm[b].clone() : int8.emptyNorms();
                newErr[b] = b < old ? int8.err[b].clone() : new float[BLOCK];
                grown.set(b);
            }
            newErr[b][r % BLOCK] = int8.encode(added.get(i), newCodes[b], newNorm[b], r % BLOCK);
            ids[r] = addedIds.get(i);
        }
        return new VectorMatrix(label, property, dim, newVersion, n, null, 0, new float[0][],
                new float[0][], null, null, ids, new java.util.BitSet(), nowRetired, buildMs,
                patches + 1, (System.nanoTime() - t0) / 1e6, null,
                int8.with(newCodes, newNorm, newErr));
    }

    /** The stored vector's values (doubles, as the store holds them) if it has row.length
     * finite values that are finite as floats too (the rows the float copy would hold), else
     * null; {@code row} is scratch. */
    /** What {@link #committed} returns for a node to leave out. */
    private static final Object GONE = new Object();

    /** The node's {@code prop} as this transaction reads it now, or {@link #GONE} when it
     * lacks {@code wanted} (null: no check) or a commit deleted it since it was found: a label
     * scan may keep listing such a node in this transaction, so a rerun would meet it again;
     * if that commit is after the copy's version, the change log removes it. */
    private static Object committed(Node node, Label wanted, String prop) {
        try {
            if (wanted != null && !node.hasLabel(wanted)) return GONE;
            return node.getProperty(prop, null);
        } catch (org.neo4j.graphdb.NotFoundException e) {
            return GONE;
        }
    }

    static double[] valuesOf(Object stored, float[] row) {
        if (!toRow(stored, row)) return null;
        return Vectors.of(stored, "stored vector");
    }

    /**
     * A new copy of the label's vectors: float32 or int8 as {@link #COPY_SETTING} says (auto:
     * float32 while its rows fit the budget, by the label's count in the counts store, else
     * int8), or a "too large" one when neither fits.
     */
    private static VectorMatrix build(Transaction tx, String label, String prop, int dim,
                                      long version) {
        String mode = copyMode();
        long budget = budget();
        int m = Math.min(SCREEN_DIMS, Math.max(1, dim / 2));
        long count = labelCount(tx, label);
        if (count < 0 || count > SMALL) {
            if (mode.equals("int8") || (mode.equals("auto") && count > 0
                    && count * (dim + m + 2) * 4L > budget)) {
                return buildInt8(tx, label, prop, dim, version, budget);
            }
        }
        VectorMatrix floats = buildFloat(tx, label, prop, dim, version, budget);
        if (floats.unusable != null && mode.equals("auto")) {
            return buildInt8(tx, label, prop, dim, version, budget);
        }
        return floats;
    }

    /** The label's node count from the counts store (the nodes, not only those with a vector),
     * or -1 where the kernel cannot be reached (not public API: Neo4j 5.26's KernelTransaction). */
    static long labelCount(Transaction tx, String label) {
        try {
            org.neo4j.kernel.api.KernelTransaction ktx = ((InternalTransaction) tx).kernelTransaction();
            int id = ktx.tokenRead().nodeLabel(label);
            return id < 0 ? 0 : ktx.dataRead().countsForNode(id);
        } catch (RuntimeException | LinkageError e) {
            return -1;
        }
    }

    /**
     * The int8 copy ({@link Int8Rows}), read in two passes so that the float rows are never
     * held: a reservoir sample of {@link #SAMPLE} rows (seeded) fixes each dimension's range,
     * then every row is encoded as it is read.
     */
    @SuppressWarnings("deprecation")
    private static VectorMatrix buildInt8(Transaction tx, String label, String prop, int dim,
                                          long version, long budget) {
        long t0 = System.nanoTime();
        java.util.Random random = new java.util.Random(38);
        double[][] sample = new double[SAMPLE][];
        float[] row = new float[dim];
        long seen = 0;
        try (ResourceIterator<Node> nodes = tx.findNodes(Label.label(label))) {
            while (nodes.hasNext()) {
                Node node = nodes.next();
                long slot = seen < SAMPLE ? seen : (long) (random.nextDouble() * (seen + 1));
                seen++;
                if (slot >= SAMPLE) continue;
                Object stored = committed(node, null, prop);
                double[] x = stored == GONE ? null : valuesOf(stored, row);
                if (x != null) sample[(int) slot] = x;
            }
        }
        int filled = 0;
        for (double[] x : sample) if (x != null) sample[filled++] = x;
        Int8Rows q = Int8Rows.empty(sample, filled, dim);
        List<byte[]> codes = new ArrayList<>();
        List<float[]> norms = new ArrayList<>(), errs = new ArrayList<>();
        long[] ids = new long[BLOCK];
        int n = 0;
        try (ResourceIterator<Node> nodes = tx.findNodes(Label.label(label))) {
            while (nodes.hasNext()) {
                Node node = nodes.next();
                Object stored = committed(node, null, prop);
                double[] x = stored == GONE ? null : valuesOf(stored, row);
                if (x == null) continue;  // as the index: dim finite values
                int b = n / BLOCK, o = n % BLOCK;
                if (o == 0) {
                    if ((long) (b + 1) * BLOCK * Int8Rows.rowBytes(dim) > budget) {
                        return tooLarge(label, prop, dim, version, t0, "more than " + (long) b * BLOCK
                                + " vectors would exceed " + HEAP_SHARE_SETTING + " of the heap even as int8");
                    }
                    codes.add(new byte[BLOCK * dim]);
                    norms.add(q.emptyNorms());
                    errs.add(new float[BLOCK]);
                    if (ids.length < (b + 1) * BLOCK) ids = Arrays.copyOf(ids, ids.length * 2);
                }
                errs.get(b)[o] = q.encode(x, codes.get(b), norms.get(b), o);
                ids[n++] = node.getId();
            }
        }
        Int8Rows rows = q.with(codes.toArray(new byte[0][]), norms.toArray(new float[0][]),
                errs.toArray(new float[0][]));
        return new VectorMatrix(label, prop, dim, version, n, null, 0, new float[0][], new float[0][],
                null, null, ids, new java.util.BitSet(), new java.util.BitSet(),
                (System.nanoTime() - t0) / 1e6, 0, 0, null, rows);
    }

    /** An int8 copy of rows already read ({@code rows[r]}, node {@code ids[r]}), sampled as
     * {@link #buildInt8} samples: for the JUnit tests and the benchmark. */
    static VectorMatrix int8FromRows(String label, String prop, int dim, long version,
                                     double[][] rows, long[] ids) {
        return int8FromRows(label, prop, dim, version, rows.length, r -> rows[r], ids);
    }

    /** {@link #int8FromRows} of {@code n} rows given one at a time ({@code row.apply(r)}). */
    static VectorMatrix int8FromRows(String label, String prop, int dim, long version, int n,
                                     java.util.function.IntFunction<double[]> row, long[] ids) {
        long t0 = System.nanoTime();
        java.util.Random random = new java.util.Random(38);
        double[][] sample = new double[Math.min(SAMPLE, n)][];
        for (int r = 0; r < n; r++) {
            long slot = r < SAMPLE ? r : (long) (random.nextDouble() * (r + 1));
            if (slot < sample.length) sample[(int) slot] = row.apply(r);
        }
        Int8Rows q = Int8Rows.empty(sample, sample.length, dim);
        int blocks = (n + BLOCK - 1) / BLOCK;
        byte[][] codes = new byte[blocks][BLOCK * dim];
        float[][] norms = new float[blocks][], errs = new float[blocks][BLOCK];
        for (int b = 0; b < blocks; b++) norms[b] = q.emptyNorms();
        for (int r = 0; r < n; r++) {
            errs[r / BLOCK][r % BLOCK] = q.encode(row.apply(r), codes[r / BLOCK], norms[r / BLOCK], r % BLOCK);
        }
        return new VectorMatrix(label, prop, dim, version, n, null, 0, new float[0][],
                new float[0][], null, null, Arrays.copyOf(ids, blocks * BLOCK), new java.util.BitSet(),
                new java.util.BitSet(), (System.nanoTime() - t0) / 1e6, 0, 0, null,
                q.with(codes, norms, errs));
    }

    @SuppressWarnings("deprecation")
    private static VectorMatrix buildFloat(Transaction tx, String label, String prop, int dim,
                                           long version, long budget) {
        long t0 = System.nanoTime();
        int m = Math.min(SCREEN_DIMS, Math.max(1, dim / 2));
        List<float[]> blocks = new ArrayList<>();
        long[] ids = new long[BLOCK];
        float[] row = new float[dim];
        java.util.BitSet rounded = new java.util.BitSet();
        int n = 0;
        try (ResourceIterator<Node> nodes = tx.findNodes(Label.label(label))) {
            while (nodes.hasNext()) {
                Node node = nodes.next();
                Object stored = committed(node, null, prop);
                if (stored == GONE) continue;
                if (!toRow(stored, row)) continue;  // as the index: dim finite values
                if (!floatValued(stored, row)) rounded.set(n);
                int b = n / BLOCK, o = n % BLOCK;
                if (o == 0) {
                    if ((long) (b + 1) * BLOCK * (dim + m + 2) * 4 > budget) {
                        return tooLarge(label, prop, dim, version, t0, "more than " + (long) b * BLOCK
                                + " vectors would exceed " + HEAP_SHARE_SETTING + " of the heap");
                    }
                    blocks.add(new float[BLOCK * dim]);
                    if (ids.length < (b + 1) * BLOCK) ids = Arrays.copyOf(ids, ids.length * 2);
                }
                System.arraycopy(row, 0, blocks.get(b), o * dim, dim);
                ids[n++] = node.getId();
            }
        }
        return fromRows(label, prop, dim, version, blocks.toArray(new float[0][]), ids, n, rounded,
                t0);
    }

    /**
     * The matrix of {@code n} rows already copied ({@code data}: blocks of {@link #BLOCK} rows,
     * row-major; {@code ids} their nodes), with its axes and screen; {@code t0} when the copy
     * started (for {@link #buildMs}).
     */
    static VectorMatrix fromRows(String label, String prop, int dim, long version, float[][] data,
                                 long[] ids, int n, java.util.BitSet rounded, long t0) {
        int m = Math.min(SCREEN_DIMS, Math.max(1, dim / 2));
        if (n <= SMALL) {  // searched row by row: no axes, no screen
            return new VectorMatrix(label, prop, dim, version, n, data, 0, new float[0][],
                    new float[0][], null, new double[0][], ids, rounded, new java.util.BitSet(),
                    (System.nanoTime() - t0) / 1e6, 0, 0, null, null);
        }
        double[] mean = new double[dim];
        for (int r = 0; r < n; r++) {
            float[] blk = data[r / BLOCK];
            int off = (r % BLOCK) * dim;
            for (int i = 0; i < dim; i++) mean[i] += blk[off + i];
        }
        for (int i = 0; i < dim; i++) mean[i] /= Math.max(1, n);
        double[][] axes = principalAxes(data, n, dim, m, mean);
        int m1 = n >= twoStageRows ? (m + 1) / 2 : m;
        float[][] screen = new float[data.length][(m1 + 1) * BLOCK];
        float[][] tail = new float[data.length][(m - m1 + 1) * BLOCK];
        final int rows = n;
        IntStream.range(0, data.length).parallel().forEach(b ->
                projectBlock(data[b], Math.min(BLOCK, rows - b * BLOCK), dim, mean, axes, m1,
                        screen[b], tail[b]));
        return new VectorMatrix(label, prop, dim, version, n, data, m, screen, tail, mean, axes,
                ids, rounded, new java.util.BitSet(), (System.nanoTime() - t0) / 1e6, 0, 0, null, null);
    }

    /**
     * The screen columns of one block's {@code count} rows: each row's coordinates on the first
     * m1 axes and the norm of its residual outside them ({@code first}, column-major), its
     * coordinates on the others and the norm of its residual outside all ({@code rest},
     * row-major). Dimension-major in double, so that every inner loop runs
     * over the block's rows element-wise (C2 compiles it to SIMD; the row-at-a-time dot products
     * of {@link #project} are scalar reductions: 79 s for 919k rows, against a few here). The
     * residual norms are sqrt(|x - mean|^2 - |P(x - mean)|^2): in double its error (about 1e-13
     * absolute in the square, so at most 3e-7 in the norm) is far inside the screen's margins.
     */
    private static void projectBlock(float[] block, int count, int dim, double[] mean,
                                     double[][] axes, int m1, float[] first, float[] rest) {
        int m = axes.length, width = m - m1 + 1;
        double[][] x = new double[dim][BLOCK];
        for (int o = 0; o < count; o++) {
            int off = o * dim;
            for (int i = 0; i < dim; i++) x[i][o] = block[off + i] - mean[i];
        }
        double[] norm2 = new double[BLOCK], inPlane = new double[BLOCK], c = new double[BLOCK];
        double[] inFirst = new double[BLOCK];
        for (int i = 0; i < dim; i++) {
            double[] xi = x[i];
            for (int o = 0; o < BLOCK; o++) norm2[o] += xi[o] * xi[o];
        }
        for (int j = 0; j < m; j++) {
            Arrays.fill(c, 0.0);
            double[] axis = axes[j];
            for (int i = 0; i < dim; i++) {
                double a = axis[i];
                double[] xi = x[i];
                for (int o = 0; o < BLOCK; o++) c[o] += a * xi[o];
            }
            for (int o = 0; o < BLOCK; o++) inPlane[o] += c[o] * c[o];
            if (j < m1) {
                System.arraycopy(inPlane, 0, inFirst, 0, BLOCK);
                for (int o = 0; o < BLOCK; o++) first[j * BLOCK + o] = (float) c[o];
            } else {
                for (int o = 0; o < count; o++) rest[o * width + j - m1] = (float) c[o];
            }
        }
        for (int o = 0; o < count; o++) {
            first[m1 * BLOCK + o] = (float) Math.sqrt(Math.max(0.0, norm2[o] - inFirst[o]));
            rest[o * width + width - 1] = (float) Math.sqrt(Math.max(0.0, norm2[o] - inPlane[o]));
        }
    }

    /**
     * The coordinates of {@code centred} on the axes into {@code coords}, and the norm of the
     * rest (computed from the residual vector, not as a difference of squares).
     */
    private static double project(double[][] axes, double[] centred, double[] coords) {
        int dim = centred.length;
        double[] rest = centred.clone();
        for (int j = 0; j < axes.length; j++) {
            double c = 0.0;
            for (int i = 0; i < dim; i++) c += axes[j][i] * centred[i];
            coords[j] = c;
            for (int i = 0; i < dim; i++) rest[i] -= c * axes[j][i];
        }
        double norm2 = 0.0;
        for (double x : rest) norm2 += x * x;
        return Math.sqrt(norm2);
    }

    /**
     * m orthonormal axes spanning (approximately) the top principal components: subspace
     * iteration on the covariance of an evenly spaced sample of rows, shifted by a small
     * multiple of the identity so that it never collapses. Only orthonormality matters for
     * exactness (the bound holds for any orthonormal axes); how close they are to the principal
     * ones only decides how many rows the screen rules out.
     */
    private static double[][] principalAxes(float[][] data, int n, int dim, int m, double[] mean) {
        double[][] cov = new double[dim][dim];
        int step = Math.max(1, n / SAMPLE);
        double[] x = new double[dim];
        for (int r = 0; r < n; r += step) {
            float[] blk = data[r / BLOCK];
            int off = (r % BLOCK) * dim;
            for (int i = 0; i < dim; i++) x[i] = blk[off + i] - mean[i];
            for (int i = 0; i < dim; i++) {
                double xi = x[i];
                double[] ci = cov[i];
                for (int j = i; j < dim; j++) ci[j] += xi * x[j];
            }
        }
        double trace = 0.0;
        for (int i = 0; i < dim; i++) {
            for (int j = 0; j < i; j++) cov[i][j] = cov[j][i];
            trace += cov[i][i];
        }
        double shift = 1e-9 * trace + 1e-30;
        for (int i = 0; i < dim; i++) cov[i][i] += shift;
        java.util.Random random = new java.util.Random(42);
        double[][] q = new double[m][dim];
        for (double[] axis : q) {
            for (int i = 0; i < dim; i++) axis[i] = random.nextGaussian();
        }
        orthonormalise(q, random);
        for (int it = 0; it < ITERATIONS; it++) {
            double[][] z = new double[m][dim];
            for (int j = 0; j < m; j++) {
                for (int i = 0; i < dim; i++) {
                    double[] ci = cov[i];
                    double acc = 0.0;
                    for (int l = 0; l < dim; l++) acc += ci[l] * q[j][l];
                    z[j][i] = acc;
                }
            }
            orthonormalise(z, random);
            q = z;
        }
        return q;
    }

    /** Modified Gram-Schmidt, twice (orthonormal to rounding); a collapsed vector is redrawn. */
    private static void orthonormalise(double[][] v, java.util.Random random) {
        for (int pass = 0; pass < 2; pass++) {
            for (int j = 0; j < v.length; j++) {
                for (int attempt = 0; ; attempt++) {
                    double before = 0.0;
                    for (double x : v[j]) before += x * x;
                    for (int l = 0; l < j; l++) {
                        double c = 0.0;
                        for (int i = 0; i < v[j].length; i++) c += v[l][i] * v[j][i];
                        for (int i = 0; i < v[j].length; i++) v[j][i] -= c * v[l][i];
                    }
                    double norm2 = 0.0;
                    for (double x : v[j]) norm2 += x * x;
                    if (norm2 > 1e-20 * before && norm2 > 0.0) {
                        double inv = 1.0 / Math.sqrt(norm2);
                        for (int i = 0; i < v[j].length; i++) v[j][i] *= inv;
                        break;
                    }
                    if (attempt > 16) throw new IllegalStateException("kgdb: no orthonormal axes");
                    for (int i = 0; i < v[j].length; i++) v[j][i] = random.nextGaussian();
                }
            }
        }
    }

    /** The stored vector as floats into {@code row}: false unless it has row.length finite values. */
    static boolean toRow(Object value, float[] row) {
        if (value instanceof float[] f && f.length == row.length) {
            System.arraycopy(f, 0, row, 0, row.length);
        } else if (value instanceof double[] d && d.length == row.length) {
            for (int i = 0; i < row.length; i++) row[i] = (float) d[i];
        } else if (value instanceof long[] l && l.length == row.length) {  // [1, 2, 3] in Cypher
            for (int i = 0; i < row.length; i++) row[i] = (float) l[i];
        } else if (value instanceof int[] l && l.length == row.length) {
            for (int i = 0; i < row.length; i++) row[i] = (float) l[i];
        } else if (value instanceof short[] l && l.length == row.length) {
            for (int i = 0; i < row.length; i++) row[i] = l[i];
        } else if (value instanceof byte[] l && l.length == row.length) {
            for (int i = 0; i < row.length; i++) row[i] = l[i];
        } else {
            return false;
        }
        for (float x : row) {
            if (!Float.isFinite(x)) return false;
        }
        return true;
    }

    /** Whether the copy's floats ({@code row}) are exactly the stored values. */
    private static boolean floatValued(Object stored, float[] row) {
        if (stored instanceof double[] d) {
            for (int i = 0; i < row.length; i++) {
                if (row[i] != d[i]) return false;
            }
        } else if (stored instanceof long[] l) {
            for (int i = 0; i < row.length; i++) {
                if ((long) row[i] != l[i] || Math.abs(l[i]) > (1L << 53)) return false;
            }
        } else if (stored instanceof int[] l) {
            for (int i = 0; i < row.length; i++) {
                if ((int) row[i] != l[i]) return false;
            }
        }
        return true;
    }

    /**
     * Row r's exact distance from the copy: {@link Vectors#l2} over the stored values (the
     * copy's floats are them exactly: {@link #rounded} is clear), bit-identical to it.
     */
    private double exactFromCopy(int r, double[] query) {
        float[] blk = data[r / BLOCK];
        int off = (r % BLOCK) * dim;
        double acc = 0.0;
        for (int i = 0; i < dim; i++) {
            double d = blk[off + i] - query[i];
            acc = acc + d * d;
        }
        return Math.sqrt(acc);
    }

    /** Row and exact distance of a nearest node. */
    record Hit(long nodeId, double distance) {}

    /**
     * The k rows nearest {@code query} by exact L2 (and any tied with the k-th), closest first.
     * The screen runs in float over the rows' lower bounds, the visit over their float rows;
     * {@code exact} gives a row's exact distance (the caller reads the stored vector), computed
     * only for the rows neither can rule out.
     */
    List<Hit> nearest(double[] query, int k, java.util.function.LongToDoubleFunction exact) {
        int kk = Math.min(k, live);
        if (kk == 0) return List.of();
        if (int8 != null) return nearestInt8(query, k, exact);
        if (rows <= SMALL) return everyRow(query, k, exact);
        float[] q = new float[dim];
        double norm2 = 0.0;
        double[] centred = new double[dim];
        double centred2 = 0.0;
        for (int i = 0; i < dim; i++) {
            q[i] = (float) query[i];
            norm2 += query[i] * query[i];
            centred[i] = query[i] - mean[i];
            centred2 += centred[i] * centred[i];
        }
        int m = screenDims, m1 = firstDims, width = m - m1 + 1;
        double[] coords = new double[m];
        double residual = project(axes, centred, coords);
        double outsideFirst = residual * residual;  // the residual outside the first m1 axes
        for (int j = m1; j < m; j++) outsideFirst += coords[j] * coords[j];
        float[] qs = new float[m1 + 1];
        for (int j = 0; j < m1; j++) qs[j] = (float) coords[j];
        qs[m1] = (float) Math.sqrt(outsideFirst);
        float[] qt = new float[width];
        for (int j = m1; j < m; j++) qt[j - m1] = (float) coords[j];
        qt[width - 1] = (float) residual;
        long t0 = System.nanoTime();
        int blocks = (rows + BLOCK - 1) / BLOCK;
        float[] lower = new float[blocks * BLOCK];
        IntStream stream = IntStream.range(0, blocks);
        (blocks >= PARALLEL_BLOCKS ? stream.parallel() : stream).forEach(b -> {
            float[] acc = new float[BLOCK];
            float[] s = screen[b];
            for (int j = 0; j <= m1; j++) accumulate(s, j * BLOCK, qs[j], acc);
            System.arraycopy(acc, 0, lower, b * BLOCK, BLOCK);
        });
        long t1 = System.nanoTime();
        // The first k rows (in row order) of the rows with the k smallest bounds give a first
        // k-th distance. Visited rows and their float distances are kept in two short lists
        // (not arrays of every row: at 919k rows those cost more than the visits).
        float seed = kthSmallest(lower, rows, kk);
        float[] top = new float[kk];  // max-heap of the k smallest full distances so far
        int size = 0;
        int[] visited = new int[Math.max(64, 2 * kk)];
        float[] full = new float[visited.length];
        int candidates = 0, screened = 0;
        int firstEnd = 0;  // the first group is every row before it whose bound is <= seed
        for (int r = 0; r < rows && size < kk; r++) {
            if (lower[r] <= seed) {
                visited[candidates] = r;
                full[candidates] = distance(r, q);
                size = offer(top, size, full[candidates++]);
                firstEnd = r + 1;
            }
        }
        double limit = limit(top[0], norm2);
        double bound = boundLimit(limit, centred2);
        // Every other row whose first bound could be within the limit, in increasing bound
        // order: its second bound (all m axes) from the row-major tail, then if that too could
        // be within the limit its float distance.
        long[] order = new long[64];
        int count = 0;
        for (int r = 0; r < rows; r++) {
            if (lower[r] <= bound && (r >= firstEnd || lower[r] > seed)) {
                if (count == order.length) order = Arrays.copyOf(order, count * 2);
                order[count++] = ((long) Float.floatToIntBits(Math.max(0f, lower[r])) << 32) | r;
            }
        }
        Arrays.sort(order, 0, count);
        for (int c = 0; c < count; c++) {
            int r = (int) order[c];
            if (lower[r] > bound) break;
            screened++;
            if (secondBound(r, lower[r], qs[m1], qt) > bound) continue;
            if (candidates == visited.length) {
                visited = Arrays.copyOf(visited, 2 * candidates);
                full = Arrays.copyOf(full, 2 * candidates);
            }
            visited[candidates] = r;
            float d = distance(r, q);
            full[candidates++] = d;
            if (d < top[0]) {
                size = offer(top, size, d);
                limit = limit(top[0], norm2);
                bound = boundLimit(limit, centred2);
            }
        }
        List<Hit> hits = new ArrayList<>();
        int fromStore = 0;
        for (int c = 0; c < candidates; c++) {
            int r = visited[c];
            if (full[c] <= limit) {
                hits.add(new Hit(nodeIds[r], rounded.get(r) ? exact.applyAsDouble(nodeIds[r])
                        : exactFromCopy(r, query)));
                if (rounded.get(r)) fromStore++;
            }
        }
        hits.sort((a, b) -> Double.compare(a.distance(), b.distance()));
        int end = Math.min(k, hits.size());
        while (end < hits.size() && hits.get(end).distance() == hits.get(end - 1).distance()) end++;
        lastScreenMs = (t1 - t0) / 1e6;
        lastExactMs = (System.nanoTime() - t1) / 1e6;
        lastRecomputed = hits.size();
        lastFromStore = fromStore;
        lastCandidates = candidates;
        lastScreened = screened;
        return hits.subList(0, end);
    }

    /** {@link #nearest} on the int8 copy: every exact distance from {@code exact} (the store). */
    private List<Hit> nearestInt8(double[] query, int k, java.util.function.LongToDoubleFunction exact) {
        int shortList = (int) Math.min(Integer.MAX_VALUE / 2, Math.max(64L, (long) k * rerankFactor()));
        Int8Rows.Stats s = new Int8Rows.Stats();
        List<Hit> hits = int8.nearest(query, k, rows, retired, live, nodeIds, shortList, shortList, exact, s);
        lastScreenMs = s.screenMs;
        lastExactMs = s.exactMs;
        lastRecomputed = s.reranked;
        lastCandidates = s.reranked;
        lastFromStore = s.reranked;
        lastScreened = s.pending;
        lastProved = s.proved;
        return hits;
    }

    /**
     * A small matrix (relation types, entity types): every row's exact distance, no screen
     * (projecting the query on the axes would cost more than the rows).
     */
    private List<Hit> everyRow(double[] query, int k, java.util.function.LongToDoubleFunction exact) {
        long t0 = System.nanoTime();
        List<Hit> hits = new ArrayList<>(rows);
        int fromStore = 0;
        for (int r = 0; r < rows; r++) {
            boolean store = rounded.get(r);
            hits.add(new Hit(nodeIds[r], store ? exact.applyAsDouble(nodeIds[r]) : exactFromCopy(r, query)));
            if (store) fromStore++;
        }
        hits.sort((a, b) -> Double.compare(a.distance(), b.distance()));
        int end = Math.min(k, hits.size());
        while (end < hits.size() && hits.get(end).distance() == hits.get(end - 1).distance()) end++;
        lastScreenMs = 0;
        lastExactMs = (System.nanoTime() - t0) / 1e6;
        lastRecomputed = rows;
        lastCandidates = rows;
        lastFromStore = fromStore;
        return hits.subList(0, end);
    }

    /** Float squared distances within this limit of the k-th may be the exact k-th or closer. */
    private static double limit(float kth, double norm2) {
        return kth * (1 + RELATIVE_MARGIN) + ABSOLUTE_MARGIN * (1 + norm2);
    }

    /**
     * A row whose float bound exceeds this cannot be within {@code limit}: the bound's own
     * rounding (its terms are of the size of the centred query and rows near it) is covered.
     */
    private static double boundLimit(double limit, double centred2) {
        double reach = Math.sqrt(centred2) + Math.sqrt(limit);
        return limit * (1 + RELATIVE_MARGIN) + ABSOLUTE_MARGIN * (1 + reach * reach);
    }

    /** Pushes v into the max-heap of the k smallest (replacing its top when full). */
    private static int offer(float[] heap, int size, float v) {
        int k = heap.length;
        if (size < k) {
            int i = size++;
            heap[i] = v;
            while (i > 0 && heap[(i - 1) / 2] < heap[i]) {
                float t = heap[i];
                heap[i] = heap[(i - 1) / 2];
                heap[(i - 1) / 2] = t;
                i = (i - 1) / 2;
            }
            return size;
        }
        if (v >= heap[0]) return size;
        heap[0] = v;
        int i = 0;
        while (true) {
            int l = 2 * i + 1, r = l + 1, m = i;
            if (l < k && heap[l] > heap[m]) m = l;
            if (r < k && heap[r] > heap[m]) m = r;
            if (m == i) return size;
            float t = heap[i];
            heap[i] = heap[m];
            heap[m] = t;
            i = m;
        }
    }

    /**
     * Row r's lower bound over all m axes: its first bound ({@code first}, the m1 leading axes
     * and the residual outside them) without that residual's term, plus the other axes' terms
     * and the term of the residual outside all m axes (each a lower bound of |x - q|^2).
     */
    private float secondBound(int r, float first, float qFirstResidual, float[] qt) {
        float[] s = screen[r / BLOCK];
        float d = s[firstDims * BLOCK + r % BLOCK] - qFirstResidual;
        float acc = Math.max(0f, first - d * d);
        float[] t = tail[r / BLOCK];
        int off = (r % BLOCK) * qt.length;
        for (int j = 0; j < qt.length; j++) {
            float e = t[off + j] - qt[j];
            acc += e * e;
        }
        return acc;
    }

    /** Row r's squared float distance to q (four running sums). */
    private float distance(int r, float[] q) {
        float[] blk = data[r / BLOCK];
        int off = (r % BLOCK) * dim;
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int i = 0;
        for (; i + 3 < dim; i += 4) {
            float d0 = blk[off + i] - q[i], d1 = blk[off + i + 1] - q[i + 1];
            float d2 = blk[off + i + 2] - q[i + 2], d3 = blk[off + i + 3] - q[i + 3];
            s0 += d0 * d0;
            s1 += d1 * d1;
            s2 += d2 * d2;
            s3 += d3 * d3;
        }
        for (; i < dim; i++) {
            float d = blk[off + i] - q[i];
            s0 += d * d;
        }
        return (s0 + s1) + (s2 + s3);
    }

    /**
     * One screened column of a block: acc[r] += (column[r] - q)^2. A plain element-wise loop,
     * which HotSpot's C2 compiles to SIMD instructions (the screen, not the answer).
     */
    private static void accumulate(float[] block, int offset, float q, float[] acc) {
        for (int r = 0; r < BLOCK; r++) {
            float d = block[offset + r] - q;
            acc[r] += d * d;
        }
    }

    /** The k-th smallest value (1-based) by a bounded max-heap of the k smallest. */
    private static float kthSmallest(float[] values, int n, int k) {
        float[] heap = new float[k];
        int size = 0;
        for (int x = 0; x < n; x++) size = offer(heap, size, values[x]);
        return heap[0];
    }
}
