package dev.kgdb.neo4j;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.NotFoundException;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;

/**
 * Personalized PageRank over the retrieval graph kgdb keeps (kgdb/documents/ppr_graph.py), the
 * same computation as {@code kgdb.ppr} in kgdb's FalkorDB UDF library (kgdb/procedures/kgdb.js)
 * and equal to kgdb's numpy reference (kgdb/retrieve/pagerank.py) within 1e-6:
 *
 * <pre>r = (1 - d) s + d P^T r,  s the seed weights normalised to sum 1,
 * P[u][v] = w(u, v) / (u's outgoing weight); a dangling node passes nothing on.</pre>
 *
 * <p>The graph is the projection {@code kgdb index ppr} stores in {@code KgdbPprBlock} nodes
 * (kgdb/documents/ppr_graph.py: "The stored projection": per block of 64 slots the nodes'
 * internal ids, their kinds (1: a chunk, the targets), CSR offsets, neighbour slots and
 * transition probabilities), listed by version on the {@code KgdbMeta {key: 'ppr'}} node.
 * It is assembled once per write (keyed by the meta node's {@code projection}, a fresh id per
 * write) and kept in memory, with the blocks by version, so that after an incremental update
 * only the rewritten blocks are read. Forward push
 * (Andersen-Chung-Lang) in first-in first-out order: a node's residual above epsilon times its
 * degree is settled, (1 - d) of it kept as score and d spread along its edges.
 *
 * <p>Rows: the chunks with a positive score (or a boost), best first, ties by node id, at most
 * k; {@code score} is the PageRank, or with boosts the PageRank divided by the best chunk's plus
 * the chunk's boost (the solver's fused ranking, kgdb/retrieve/ppr.py).
 */
public class Ppr {
    static final long MAX_PUSHES = 50_000_000L;

    @Context
    public Transaction tx;

    public static class Row {
        public Node node;
        public double score;
        public double pagerank;

        Row(Node node, double score, double pagerank) {
            this.node = node;
            this.score = score;
            this.pagerank = pagerank;
        }
    }

    /** One stored projection, assembled from its blocks: node ids by position (-1 a free slot),
     * CSR arrays, the chunks' positions, and the id -> position index. */
    record Graph(String element, Object built, long[] nodes, int[] offsets, int[] adj,
                 double[] prob, long[] chunks, Map<Long, Integer> index) {
        int find(long id) {
            Integer at = index.get(id);
            return at == null ? -1 : at;
        }
    }

    /** One block of the stored projection (kgdb/documents/ppr_graph.py: "The stored projection"). */
    record Block(long[] nodes, long[] kinds, int[] offsets, int[] adj, double[] prob) {}

    private static volatile Graph cached;
    /** Blocks by version: after an incremental update only the rewritten blocks are read. */
    private static final Map<String, Block> BLOCKS = new java.util.concurrent.ConcurrentHashMap<>();

    @Procedure(name = "kgdb.ppr", mode = Mode.READ)
    @Description("kgdb.ppr(seeds, weights, damping, epsilon, k, boostNodes, boostValues) - the k "
            + "chunks with the highest personalized PageRank from the weighted seeds (internal node "
            + "ids) over the retrieval graph's stored projection (kgdb index ppr).")
    public Stream<Row> ppr(@Name("seeds") List<Long> seeds, @Name("weights") List<Double> weights,
                           @Name("damping") Double damping, @Name("epsilon") Double epsilon,
                           @Name("k") Long k, @Name("boostNodes") List<Long> boostNodes,
                           @Name("boostValues") List<Double> boostValues) {
        if (seeds == null || weights == null || seeds.size() != weights.size()) {
            throw new IllegalArgumentException("kgdb.ppr: seeds and weights must be lists of one length");
        }
        if (damping == null || !(damping >= 0 && damping < 1)) {
            throw new IllegalArgumentException("kgdb.ppr: damping must be in [0, 1)");
        }
        if (epsilon == null || !(epsilon > 0)) {
            throw new IllegalArgumentException("kgdb.ppr: epsilon must be a number > 0");
        }
        if (k == null || k < 0) throw new IllegalArgumentException("kgdb.ppr: k must be >= 0");
        if (boostNodes == null || boostValues == null || boostNodes.size() != boostValues.size()) {
            throw new IllegalArgumentException("kgdb.ppr: boostNodes and boostValues must be lists of one length");
        }
        Graph g = graph();
        double[] score = push(g, seeds, weights, damping, epsilon);
        Map<Long, Double> boost = new HashMap<>();
        for (int i = 0; i < boostNodes.size(); i++) {
            Double b = boostValues.get(i);
            if (boostNodes.get(i) == null || b == null || !Double.isFinite(b)) {
                throw new IllegalArgumentException("kgdb.ppr: boostValues must be numbers");
            }
            boost.merge(boostNodes.get(i), b, Double::sum);
        }
        List<long[]> picked = new ArrayList<>();  // [node id, position or -1]
        double top = 0;
        java.util.Set<Long> seen = new java.util.HashSet<>();
        for (long id : g.chunks()) {
            if (!seen.add(id)) continue;
            int at = g.find(id);
            double pr = at >= 0 ? score[at] : 0;
            if (pr > 0 || boost.containsKey(id)) picked.add(new long[] {id, at});
            if (pr > top) top = pr;
        }
        List<double[]> rows = new ArrayList<>();  // [node id, score, pagerank]
        for (long[] p : picked) {
            double pr = p[1] >= 0 ? score[(int) p[1]] : 0;
            double s = boost.isEmpty() ? pr : (top > 0 ? pr / top : 0) + boost.getOrDefault(p[0], 0.0);
            rows.add(new double[] {p[0], s, pr});
        }
        rows.sort((x, y) -> x[1] != y[1] ? Double.compare(y[1], x[1]) : Double.compare(x[0], y[0]));
        // a chunk deleted since the projection was built (kgdb index ppr brings it up to date)
        // is left out, as a search would if the projection were current
        List<Row> out = new ArrayList<>();
        for (double[] r : rows) {
            if (out.size() >= k) break;
            try {
                out.add(new Row(tx.getNodeById((long) r[0]), r[1], r[2]));
            } catch (NotFoundException e) {
                // deleted: not a chunk any more
            }
        }
        return out.stream();
    }

    /** The stored projection: the cached one while the meta node's projection id is the same;
     * else assembled from its blocks, reading only those not kept by version. */
    private Graph graph() {
        Node meta = tx.findNode(Label.label("KgdbMeta"), "key", "ppr");
        if (meta == null || !meta.hasProperty("versions")) {
            throw new IllegalArgumentException(
                    "kgdb.ppr: no stored projection of the retrieval graph: run kgdb index ppr");
        }
        Object built = meta.getProperty("projection", null);
        Graph g = cached;
        if (g != null && g.element().equals(meta.getElementId()) && java.util.Objects.equals(g.built(), built)) {
            return g;
        }
        String[] versions = strings(meta.getProperty("versions"));
        java.util.Set<String> wanted = new java.util.HashSet<>(java.util.Arrays.asList(versions));
        try (var blocks = tx.findNodes(Label.label("KgdbPprBlock"))) {
            while (blocks.hasNext()) {
                Node b = blocks.next();
                String version = (String) b.getProperty("version", null);
                if (version == null || !wanted.contains(version) || BLOCKS.containsKey(version)) continue;
                Block block = new Block(longs(b.getProperty("nodes")), longs(b.getProperty("kinds")),
                        ints(b.getProperty("offsets")), ints(b.getProperty("adj")), doubles(b.getProperty("prob")));
                int n = block.nodes().length;
                if (block.kinds().length != n || block.offsets().length != n + 1 || block.offsets()[0] != 0
                        || block.offsets()[n] != block.adj().length || block.adj().length != block.prob().length) {
                    throw new IllegalArgumentException("kgdb.ppr: block " + version + " does not describe its nodes' edges");
                }
                BLOCKS.put(version, block);
            }
        }
        int n = 0, m = 0;
        Block[] parts = new Block[versions.length];
        for (int i = 0; i < versions.length; i++) {
            parts[i] = BLOCKS.get(versions[i]);
            if (parts[i] == null) throw new IllegalArgumentException("kgdb.ppr: block " + versions[i] + " of the projection is missing");
            n += parts[i].nodes().length;
            m += parts[i].adj().length;
        }
        long[] nodes = new long[n];
        int[] offsets = new int[n + 1];
        int[] adj = new int[m];
        double[] prob = new double[m];
        List<Long> chunks = new ArrayList<>();
        Map<Long, Integer> index = new HashMap<>();
        int i = 0, e = 0;
        for (Block b : parts) {
            for (int j = 0; j < b.nodes().length; j++, i++) {
                nodes[i] = b.nodes()[j];
                offsets[i] = e + b.offsets()[j];
                if (nodes[i] >= 0) index.put(nodes[i], i);
                if (b.kinds()[j] == 1) chunks.add(nodes[i]);
            }
            System.arraycopy(b.adj(), 0, adj, e, b.adj().length);
            System.arraycopy(b.prob(), 0, prob, e, b.prob().length);
            e += b.adj().length;
        }
        offsets[n] = e;
        for (int v : adj) {
            if (v < 0 || v >= n) throw new IllegalArgumentException("kgdb.ppr: adj holds a position outside the nodes");
        }
        g = new Graph(meta.getElementId(), built, nodes, offsets, adj, prob,
                chunks.stream().mapToLong(Long::longValue).toArray(), index);
        cached = g;
        BLOCKS.keySet().retainAll(wanted);
        return g;
    }

    static double[] push(Graph g, List<Long> seeds, List<Double> weights, double damping, double epsilon) {
        int n = g.nodes().length;
        int[] offsets = g.offsets();
        int[] adj = g.adj();
        double[] prob = g.prob();
        double[] score = new double[n];
        double[] residual = new double[n];
        double total = 0;
        for (Double w : weights) {
            if (w == null || !(w >= 0) || !Double.isFinite(w)) {
                throw new IllegalArgumentException("kgdb.ppr: weights must be non-negative numbers");
            }
            total += w;
        }
        for (int i = 0; i < seeds.size(); i++) {
            int at = seeds.get(i) == null ? -1 : g.find(seeds.get(i));
            if (at < 0) throw new IllegalArgumentException("kgdb.ppr: seed " + seeds.get(i) + " is not a node of the graph");
            if (total > 0) residual[at] += weights.get(i) / total;
        }
        int[] queue = new int[Math.max(16, n)];
        int head = 0, tail = 0, size = 0;
        boolean[] queued = new boolean[n];
        for (int i = 0; i < n; i++) {
            if (residual[i] > limit(offsets, i, epsilon)) {
                queue[tail] = i; tail = (tail + 1) % queue.length; size++; queued[i] = true;
            }
        }
        long pushes = 0;
        while (size > 0) {
            int u = queue[head]; head = (head + 1) % queue.length; size--;
            queued[u] = false;
            double ru = residual[u];
            if (!(ru > limit(offsets, u, epsilon))) continue;
            residual[u] = 0;
            score[u] += (1 - damping) * ru;
            double spread = damping * ru;
            for (int e = offsets[u]; e < offsets[u + 1]; e++) {
                int v = adj[e];
                residual[v] += spread * prob[e];
                if (!queued[v] && residual[v] > limit(offsets, v, epsilon)) {
                    queue[tail] = v; tail = (tail + 1) % queue.length; size++; queued[v] = true;
                }
            }
            if (++pushes > MAX_PUSHES) throw new IllegalArgumentException("kgdb.ppr: did not settle (epsilon too small)");
        }
        return score;
    }

    private static double limit(int[] offsets, int i, double epsilon) {
        return epsilon * Math.max(1, offsets[i + 1] - offsets[i]);
    }

    private static long[] longs(Object value) {
        if (value instanceof long[] a) return a;
        if (value instanceof int[] a) return java.util.Arrays.stream(a).asLongStream().toArray();
        if (value instanceof Object[] a && a.length == 0) return new long[0];
        if (value != null && value.getClass().isArray() && java.lang.reflect.Array.getLength(value) == 0) return new long[0];
        throw new IllegalArgumentException("kgdb.ppr: the stored projection holds no integer list");
    }

    private static String[] strings(Object value) {
        if (value instanceof String[] a) return a;
        if (value != null && value.getClass().isArray() && java.lang.reflect.Array.getLength(value) == 0) return new String[0];
        throw new IllegalArgumentException("kgdb.ppr: the stored projection holds no list of block versions");
    }

    private static int[] ints(Object value) {
        long[] a = longs(value);
        int[] out = new int[a.length];
        for (int i = 0; i < a.length; i++) out[i] = Math.toIntExact(a[i]);
        return out;
    }

    private static double[] doubles(Object value) {
        if (value instanceof double[] a) return a;
        if (value instanceof long[] a) return java.util.Arrays.stream(a).asDoubleStream().toArray();
        if (value != null && value.getClass().isArray() && java.lang.reflect.Array.getLength(value) == 0) return new double[0];
        throw new IllegalArgumentException("kgdb.ppr: the stored projection holds no number list");
    }
}
