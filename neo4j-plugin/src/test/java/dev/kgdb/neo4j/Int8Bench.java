package dev.kgdb.neo4j;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * The int8 copy ({@link Int8Rows}) against the float32 copy on a synthetic set, without a
 * database: memory, search time, and recall@k against a brute-force scan in double, as one JSON
 * object per data set and k on stdout. Two sets: "composed" rows as {@code kgdb bench scale}
 * makes its names (the normalised sum of two or three "word" vectors, plus noise, the words drawn
 * with a spread that differs by dimension as MiniLM's does), queried with a known row plus noise,
 * a new composition, and a random direction; and "gaussian" rows (isotropic unit vectors, the hard
 * case: every distance is nearly the same).
 *
 * <pre>java -Xmx4g -cp target/classes:target/test-classes:$(cat cp.txt) dev.kgdb.neo4j.Int8Bench [rows] [dim] [queries]</pre>
 */
public final class Int8Bench {
    private Int8Bench() {}

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        int dim = args.length > 1 ? Integer.parseInt(args[1]) : 384;
        int queries = args.length > 2 ? Integer.parseInt(args[2]) : 60;
        if (args.length > 3 && args[3].equals("int8-only")) {
            int8Only(n, dim, queries);
            return;
        }
        for (String set : List.of("composed", "gaussian")) {
            Random random = new Random(38);
            double[][] rows = set.equals("composed") ? composed(random, n, dim) : gaussian(random, n, dim);
            double[][] qs = new double[queries][];
            for (int i = 0; i < queries; i++) {
                qs[i] = set.equals("composed") ? composedQuery(random, rows, i % 3, dim) : gaussian(random, 1, dim)[0];
            }
            run(set, rows, qs, dim, new int[] {10, 256});
        }
    }

    static void run(String set, double[][] rows, double[][] qs, int dim, int[] ks) {
        int n = rows.length;
        long[] ids = new long[n];
        for (int r = 0; r < n; r++) ids[r] = r;
        long before = used();
        VectorMatrix int8 = VectorMatrix.int8FromRows("Entity", "embedding", dim, 0, rows, ids);
        long int8Heap = used() - before;
        float[][] data = new float[(n + VectorMatrix.BLOCK - 1) / VectorMatrix.BLOCK][];
        for (int b = 0; b < data.length; b++) data[b] = new float[VectorMatrix.BLOCK * dim];
        for (int r = 0; r < n; r++) {
            for (int i = 0; i < dim; i++) data[r / VectorMatrix.BLOCK][(r % VectorMatrix.BLOCK) * dim + i] = (float) rows[r][i];
        }
        before = used();
        VectorMatrix floats = VectorMatrix.fromRows("Entity", "embedding", dim, 0, data, ids, n, new BitSet(), System.nanoTime());
        long floatHeap = used() - before + 4L * data.length * data[0].length;
        for (int k : ks) {
            double recall = 0;
            int exactOrder = 0, proved = 0;
            List<Double> tInt8 = new ArrayList<>(), tFloat = new ArrayList<>(), reranked = new ArrayList<>();
            for (int round = 0; round < 2; round++) {  // the first round warms the JIT
                for (double[] q : qs) {
                    long s = System.nanoTime();
                    List<VectorMatrix.Hit> got = int8.nearest(q, k, id -> Vectors.l2(rows[(int) id], q));
                    double ms8 = (System.nanoTime() - s) / 1e6;
                    s = System.nanoTime();
                    List<VectorMatrix.Hit> want = floats.nearest(q, k, id -> Vectors.l2(rows[(int) id], q));
                    double msF = (System.nanoTime() - s) / 1e6;
                    if (round == 0) continue;
                    tInt8.add(ms8);
                    tFloat.add(msF);
                    reranked.add((double) int8.lastRecomputed);
                    if (int8.lastProved) proved++;
                    int top = Math.min(k, want.size());
                    java.util.Set<Long> truth = new java.util.HashSet<>();
                    for (int i = 0; i < top; i++) truth.add(want.get(i).nodeId());
                    int hit = 0;
                    for (int i = 0; i < Math.min(top, got.size()); i++) if (truth.contains(got.get(i).nodeId())) hit++;
                    recall += (double) hit / top;
                    boolean same = got.size() >= top;
                    for (int i = 0; same && i < top; i++) same = got.get(i).distance() == want.get(i).distance();
                    if (same) exactOrder++;
                }
            }
            System.out.printf(Locale.ROOT, "{\"set\": \"%s\", \"rows\": %d, \"dim\": %d, \"k\": %d, \"queries\": %d, "
                            + "\"int8_bytes\": %d, \"float32_bytes\": %d, \"int8_heap_measured\": %d, "
                            + "\"float32_heap_measured\": %d, \"int8_build_ms\": %.0f, \"float32_build_ms\": %.0f, "
                            + "\"recall_at_k\": %.4f, \"same_top_k_distances\": %d, \"proved_exact\": %d, "
                            + "\"int8_p50_ms\": %.1f, \"int8_p90_ms\": %.1f, \"float32_p50_ms\": %.1f, "
                            + "\"float32_p90_ms\": %.1f, \"reranked_p50\": %.0f, \"reranked_p90\": %.0f}%n",
                    set, n, dim, k, qs.length, int8.bytes(), floats.bytes(), int8Heap, floatHeap, int8.buildMs,
                    floats.buildMs, recall / qs.length, exactOrder, proved, pct(tInt8, 50), pct(tInt8, 90),
                    pct(tFloat, 50), pct(tFloat, 90), pct(reranked, 50), pct(reranked, 90));
        }
    }

    /**
     * The int8 copy alone at a size whose float copy (and double rows) would not fit the
     * benchmark's heap: composed rows kept as floats, truth by a brute-force scan in double.
     */
    static void int8Only(int n, int dim, int queries) {
        Random random = new Random(38);
        double[][] vocab;
        int words = Math.max(64, n / 20);
        double[] spread = new double[dim];
        for (int i = 0; i < dim; i++) spread[i] = i % 37 == 0 ? 4.0 : 0.5 + random.nextDouble();
        vocab = new double[words][dim];
        for (double[] w : vocab) {
            for (int i = 0; i < dim; i++) w[i] = random.nextGaussian() * spread[i];
            normalise(w);
        }
        float[][] rows = new float[n][dim];
        for (int r = 0; r < n; r++) {
            double[] v = composition(random, vocab, dim);
            for (int i = 0; i < dim; i++) rows[r][i] = (float) v[i];
        }
        COMPOSED_VOCAB = vocab;
        long[] ids = new long[n];
        for (int r = 0; r < n; r++) ids[r] = r;
        java.util.function.IntFunction<double[]> row = r -> {
            double[] d = new double[dim];
            for (int i = 0; i < dim; i++) d[i] = rows[r][i];
            return d;
        };
        long before = used();
        VectorMatrix int8 = VectorMatrix.int8FromRows("Entity", "embedding", dim, 0, n, row, ids);
        long heap = used() - before;
        for (int k : new int[] {10, 256}) {
            double recall = 0;
            int proved = 0, same = 0, measured = 0;
            List<Double> times = new ArrayList<>(), scans = new ArrayList<>();
            for (int t = 0; t < queries + 3; t++) {
                double[] q;
                if (t % 3 == 1) {
                    q = composition(random, vocab, dim);
                } else if (t % 3 == 2) {
                    q = gaussian(random, 1, dim)[0];
                } else {
                    q = row.apply(random.nextInt(n));
                    for (int i = 0; i < dim; i++) q[i] += 0.01 * random.nextGaussian();
                    normalise(q);
                }
                final double[] query = q;
                long s = System.nanoTime();
                List<VectorMatrix.Hit> got = int8.nearest(query, k, id -> Vectors.l2(row.apply((int) id), query));
                double ms = (System.nanoTime() - s) / 1e6;
                if (t < 3) continue;  // warm-up
                measured++;
                times.add(ms);
                scans.add(int8.lastScreenMs);
                if (int8.lastProved) proved++;
                double[] d = new double[n];
                for (int r = 0; r < n; r++) {
                    double acc = 0.0;
                    for (int i = 0; i < dim; i++) {
                        double x = rows[r][i] - query[i];
                        acc = acc + x * x;
                    }
                    d[r] = Math.sqrt(acc);
                }
                double[] sorted = d.clone();
                java.util.Arrays.sort(sorted);
                double kth = sorted[k - 1];
                int hit = 0;
                for (int i = 0; i < Math.min(k, got.size()); i++) if (d[(int) got.get(i).nodeId()] <= kth) hit++;
                recall += (double) hit / k;
                boolean equal = got.size() >= k;
                for (int i = 0; equal && i < k; i++) equal = got.get(i).distance() == sorted[i];
                if (equal) same++;
            }
            System.out.printf(Locale.ROOT, "{\"set\": \"composed\", \"rows\": %d, \"dim\": %d, \"k\": %d, "
                            + "\"queries\": %d, \"int8_bytes\": %d, \"int8_heap_measured\": %d, "
                            + "\"float32_bytes_would_be\": %d, \"int8_build_ms\": %.0f, \"recall_at_k\": %.4f, "
                            + "\"same_top_k_distances\": %d, \"proved_exact\": %d, \"int8_p50_ms\": %.1f, "
                            + "\"int8_p90_ms\": %.1f, \"scan_p50_ms\": %.1f}%n",
                    n, dim, k, measured, int8.bytes(), heap,
                    (long) ((n + VectorMatrix.BLOCK - 1) / VectorMatrix.BLOCK) * VectorMatrix.BLOCK
                            * ((dim + Math.min(VectorMatrix.SCREEN_DIMS, dim / 2) + 2) * 4L + 8),
                    int8.buildMs, recall / measured, same, proved, pct(times, 50), pct(times, 90), pct(scans, 50));
        }
    }

    /** Rows composed as kgdb's synthetic names are: normalised sums of words, plus noise. */
    static double[][] composed(Random random, int n, int dim) {
        int words = Math.max(64, n / 20);
        double[] spread = new double[dim];
        for (int i = 0; i < dim; i++) spread[i] = i % 37 == 0 ? 4.0 : 0.5 + random.nextDouble();
        double[][] vocab = new double[words][dim];
        for (double[] w : vocab) {
            for (int i = 0; i < dim; i++) w[i] = random.nextGaussian() * spread[i];
            normalise(w);
        }
        double[][] rows = new double[n][];
        for (int r = 0; r < n; r++) rows[r] = composition(random, vocab, dim);
        COMPOSED_VOCAB = vocab;
        return rows;
    }

    private static double[][] COMPOSED_VOCAB;

    private static double[] composition(Random random, double[][] vocab, int dim) {
        double[] v = new double[dim];
        int parts = 2 + random.nextInt(2);
        for (int p = 0; p < parts; p++) {
            double[] w = vocab[random.nextInt(vocab.length)];
            for (int i = 0; i < dim; i++) v[i] += w[i];
        }
        for (int i = 0; i < dim; i++) v[i] += 0.02 * random.nextGaussian();
        normalise(v);
        for (int i = 0; i < dim; i++) v[i] = (float) v[i];  // stored as MiniLM's float32 outputs
        return v;
    }

    /** A query: a known row plus noise (kind 0), a new composition (1), or a random direction (2). */
    static double[] composedQuery(Random random, double[][] rows, int kind, int dim) {
        if (kind == 1) return composition(random, COMPOSED_VOCAB, dim);
        if (kind == 2) return gaussian(random, 1, dim)[0];
        double[] q = rows[random.nextInt(rows.length)].clone();
        for (int i = 0; i < dim; i++) q[i] += 0.01 * random.nextGaussian();
        normalise(q);
        return q;
    }

    static double[][] gaussian(Random random, int n, int dim) {
        double[][] rows = new double[n][dim];
        for (double[] v : rows) {
            for (int i = 0; i < dim; i++) v[i] = random.nextGaussian();
            normalise(v);
            for (int i = 0; i < dim; i++) v[i] = (float) v[i];
        }
        return rows;
    }

    private static void normalise(double[] v) {
        double s = 0;
        for (double x : v) s += x * x;
        s = Math.sqrt(s);
        for (int i = 0; i < v.length; i++) v[i] /= s;
    }

    private static long used() {
        for (int i = 0; i < 3; i++) System.gc();
        Runtime rt = Runtime.getRuntime();
        return rt.totalMemory() - rt.freeMemory();
    }

    static double pct(List<Double> v, double p) {
        double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return a.length == 0 ? 0 : a[(int) Math.min(a.length - 1, Math.round(p / 100 * (a.length - 1)))];
    }
}
