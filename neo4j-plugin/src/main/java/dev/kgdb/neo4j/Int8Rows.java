package dev.kgdb.neo4j;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.function.LongToDoubleFunction;
import java.util.stream.IntStream;

/**
 * The int8 copy of one vector index (issue 38, "vectors that fit"): each row is dim bytes, one
 * code per dimension, plus two floats (the squared norm of its decoded offset and a bound on its
 * quantization error), against the float copy's dim + m + 2 floats (a 384-d row: 392 bytes
 * against 2,312; node ids, 8 bytes a row, are kept by both). A search scans the codes for a short
 * list, re-ranks it from the stored vectors (the node property, read through the caller's
 * {@code exact}), then proves the answer: every row outside the short list whose lower bound
 * could still be within the k-th exact distance is re-ranked too, up to a budget.
 *
 * <p>Why per-dimension scales (scalar quantization, as Faiss's SQ8 does), not a scale per
 * vector: the query is compared with every row in code space, so a scale shared by all rows
 * lets the scan be one multiply-add per byte (the query's weights {@code (q_i - mid_i) *
 * step_i} are computed once) with no per-row factor inside the loop; a scale per vector pays
 * for rows whose norms differ, and kgdb's are unit-length MiniLM outputs (one norm for all);
 * and a dimension's range is a property of the corpus, so each dimension spends its 256 levels
 * on its own values (MiniLM's dimensions differ in mean and spread, and a few are nearly
 * constant), where a per-vector scale spends them on each row's largest coordinate. On MiniLM
 * names the per-dimension error is the smaller, on average and in the tail
 * ({@code python -m benchmarks.plugin_int8}: {@code minilm_quantization_error}). The ranges
 * are the sample's minimum and maximum per dimension, widened by {@link #WIDEN} (a sample's
 * extremes are not the corpus's: at 2% a few values in ten thousand were clipped, and a
 * clipped value's error dominates its row's); a value still outside is clipped, which only
 * makes its row's error bound (and so its re-rank) larger, never wrong.
 *
 * <p>Exactness: row r decodes to {@code x̂_i = mid_i + step_i c_i}; at build {@code err_r >=
 * |x_r - x̂_r|} is kept (from the stored values, in double, rounded up), so by the triangle
 * inequality {@code |q - x_r| >= |q - x̂_r| - err_r}. The scan computes {@code |q - x̂_r|^2} in
 * float as {@code |a|^2 + |s c|^2 - 2 (a s) . c} (a = q - mid), whose rounding is bounded per
 * query ({@link #slack}). A row is left out only when that lower bound exceeds the k-th exact
 * distance: when every such row fits in the budget the answer equals an exact scan's (ties at
 * the k-th included); otherwise the rows with the smallest estimates are re-ranked and the
 * search reports it was not proved ({@link Stats#proved}).
 */
final class Int8Rows {
    static final int BLOCK = VectorMatrix.BLOCK;
    /** Each dimension's range is the sample's, widened by this share of it on both sides. */
    static final double WIDEN = 0.10;
    /** 2^-24: float's unit roundoff. */
    private static final double U = 0x1p-24;

    final int dim;
    /** The code 0 of each dimension and the step between codes (double: the decoded row). */
    final double[] mid;
    final double[] step;
    /** Row r's code of dimension i at {@code codes[r / BLOCK][i * BLOCK + r % BLOCK]}
     * (dimension-major inside a block: the scan runs element-wise over a block's rows, which
     * C2 compiles to SIMD, as the float screen). */
    final byte[][] codes;
    /** Row r's {@code sum_i (step_i c_i)^2} at {@code norm[r / BLOCK][r % BLOCK]}; +infinity for
     * retired rows and the unused rows of the last block (no estimate lets them through). */
    final float[][] norm;
    /** Row r's bound on {@code |x_r - x̂_r|} (rounded up). */
    final float[][] err;

    Int8Rows(int dim, double[] mid, double[] step, byte[][] codes, float[][] norm, float[][] err) {
        this.dim = dim;
        this.mid = mid;
        this.step = step;
        this.codes = codes;
        this.norm = norm;
        this.err = err;
    }

    /** Bytes held: the codes, norms and error bounds (the node ids are counted by the caller). */
    long bytes() {
        return (long) codes.length * BLOCK * (dim + 8);
    }

    /** Bytes per row of an int8 copy of {@code dim} dimensions, its node id included. */
    static long rowBytes(int dim) {
        return dim + 8L + 8L;
    }

    /** The quantizer of a sample's rows ({@code count} of them, each dim values): per dimension,
     * the sample's range widened by {@link #WIDEN}, in 256 steps. */
    static Int8Rows empty(double[][] sample, int count, int dim) {
        double[] lo = new double[dim], hi = new double[dim];
        Arrays.fill(lo, Double.POSITIVE_INFINITY);
        Arrays.fill(hi, Double.NEGATIVE_INFINITY);
        for (int s = 0; s < count; s++) {
            for (int i = 0; i < dim; i++) {
                lo[i] = Math.min(lo[i], sample[s][i]);
                hi[i] = Math.max(hi[i], sample[s][i]);
            }
        }
        double[] mid = new double[dim], step = new double[dim];
        for (int i = 0; i < dim; i++) {
            if (!(lo[i] <= hi[i])) {  // no sample: any range, the error bounds stay exact
                lo[i] = -1.0;
                hi[i] = 1.0;
            }
            double width = hi[i] - lo[i];
            double pad = width > 0 ? WIDEN * width : Math.max(1e-6, 1e-6 * Math.abs(lo[i]));
            double from = lo[i] - pad, to = hi[i] + pad;
            step[i] = (to - from) / 255.0;
            mid[i] = from + 128.0 * step[i];
            if (!(step[i] > 0) || !Double.isFinite(step[i]) || !Double.isFinite(mid[i])) {
                step[i] = 1.0;
                mid[i] = 0.0;
            }
        }
        return new Int8Rows(dim, mid, step, new byte[0][], new float[0][], new float[0][]);
    }

    /** Writes row {@code x}'s codes at offset {@code o} of a block and returns its error bound
     * (its norm goes to {@code normBlock[o]}). */
    float encode(double[] x, byte[] codeBlock, float[] normBlock, int o) {
        double n2 = 0.0, e2 = 0.0, xhat2 = 0.0;
        for (int i = 0; i < dim; i++) {
            double c = Math.rint((x[i] - mid[i]) / step[i]);
            c = Math.max(-128.0, Math.min(127.0, c));
            codeBlock[i * BLOCK + o] = (byte) c;
            double sc = step[i] * c;
            n2 += sc * sc;
            double xhat = mid[i] + sc;
            double d = x[i] - xhat;
            e2 += d * d;
            xhat2 += xhat * xhat;
        }
        normBlock[o] = (float) n2;
        // double rounding of the decoded values and of the sums: far inside this margin
        double bound = Math.sqrt(e2) * (1 + 1e-9) + 1e-12 * Math.sqrt(xhat2) + Double.MIN_NORMAL;
        return Math.nextUp((float) bound);
    }

    /** A new block of codes with every row unused. */
    float[] emptyNorms() {
        float[] n = new float[BLOCK];
        Arrays.fill(n, Float.POSITIVE_INFINITY);
        return n;
    }

    /** This copy with its blocks replaced (patches: copy on write). */
    Int8Rows with(byte[][] codes, float[][] norm, float[][] err) {
        return new Int8Rows(dim, mid, step, codes, norm, err);
    }

    /** What one search did: rows it re-ranked from the store, rows the proof pass had to
     * consider, and whether it proved the answer exact. */
    static final class Stats {
        double screenMs;
        double exactMs;
        int reranked;
        int shortList;
        int pending;
        boolean proved;
    }

    /**
     * The k rows nearest {@code query} by exact L2 (ties at the k-th included), closest first:
     * the {@code shortList} rows with the smallest int8 estimates re-ranked by {@code exact},
     * then up to {@code budget} more whose lower bound does not rule them out.
     */
    List<VectorMatrix.Hit> nearest(double[] query, int k, int rows, BitSet retired, int live,
                                   long[] nodeIds, int shortList, int budget,
                                   LongToDoubleFunction exact, Stats stats) {
        int kk = Math.min(k, live);
        if (kk == 0) return List.of();
        long t0 = System.nanoTime();
        double a2 = 0.0, wsum = 0.0;
        float[] w = new float[dim];
        for (int i = 0; i < dim; i++) {
            double a = query[i] - mid[i];
            a2 += a * a;
            w[i] = (float) (a * step[i]);
            wsum += Math.abs(a * step[i]);
        }
        int blocks = (rows + BLOCK - 1) / BLOCK;
        float[] est = new float[blocks * BLOCK];
        final float af = (float) a2;
        IntStream stream = IntStream.range(0, blocks);
        (blocks >= VectorMatrix.PARALLEL_BLOCKS ? stream.parallel() : stream).forEach(b ->
                scanBlock(b, w, af, est));
        long t1 = System.nanoTime();
        // The short list: the rows with the smallest estimates (all tied at its last one).
        int want = Math.min(live, Math.max(kk, shortList));
        float cut = kthSmallest(est, rows, want);
        BitSet taken = new BitSet(rows);
        List<VectorMatrix.Hit> hits = new ArrayList<>(want + 16);
        for (int r = 0; r < rows; r++) {
            if (est[r] <= cut && !retired.get(r)) {
                taken.set(r);
                hits.add(new VectorMatrix.Hit(nodeIds[r], exact.applyAsDouble(nodeIds[r])));
            }
        }
        int reranked = hits.size();
        hits.sort((x, y) -> Double.compare(x.distance(), y.distance()));
        double kth = hits.size() >= kk ? hits.get(kk - 1).distance() : Double.POSITIVE_INFINITY;
        // The proof: any other row whose lower bound is within the k-th exact distance.
        double slackQ = 2 * U * (3 * a2 + 2.0 * (dim + 6) * 128.0 * wsum);
        int pendingCount = 0;
        long[] pending = new long[64];
        if (taken.cardinality() < live) {
            double limit = kth * (1 + 1e-9);
            for (int r = 0; r < rows; r++) {
                if (taken.get(r) || retired.get(r)) continue;
                float e = est[r];
                if (lowerBound(r, e, slackQ, a2) > limit) continue;
                if (pendingCount == pending.length) pending = Arrays.copyOf(pending, 2 * pendingCount);
                pending[pendingCount++] = ((long) Float.floatToIntBits(Math.max(0f, e)) << 32) | r;
            }
        }
        boolean proved = pendingCount <= budget;
        if (!proved) Arrays.sort(pending, 0, pendingCount);  // the smallest estimates first
        int extra = Math.min(pendingCount, budget);
        for (int c = 0; c < extra; c++) {
            int r = (int) pending[c];
            hits.add(new VectorMatrix.Hit(nodeIds[r], exact.applyAsDouble(nodeIds[r])));
        }
        reranked += extra;
        hits.sort((x, y) -> Double.compare(x.distance(), y.distance()));
        int end = Math.min(k, hits.size());
        while (end < hits.size() && hits.get(end).distance() == hits.get(end - 1).distance()) end++;
        stats.screenMs = (t1 - t0) / 1e6;
        stats.exactMs = (System.nanoTime() - t1) / 1e6;
        stats.reranked = reranked;
        stats.shortList = reranked - extra;
        stats.pending = pendingCount;
        stats.proved = proved;
        return hits.subList(0, end);
    }

    /**
     * A lower bound of row r's exact distance: sqrt(est - its rounding) - its error bound. Its
     * rounding: the scan's sums of dim + 2 terms, each at most 128 |w_i| or |a|^2 or the norm,
     * in float (and the weights' own rounding), doubled for safety.
     */
    private double lowerBound(int r, float e, double slackQ, double a2) {
        float n = norm[r / BLOCK][r % BLOCK];
        if (!Float.isFinite(e) || !Float.isFinite(n)) return 0.0;  // overflow: no bound
        double slack = slackQ + 2 * U * 3 * (a2 + n);
        double lb2 = e - slack;
        double lb = lb2 > 0 ? Math.sqrt(lb2) : 0.0;
        return Math.max(0.0, lb - err[r / BLOCK][r % BLOCK]);
    }

    /** Estimates of one block's rows: |a|^2 + |s c|^2 - 2 (a s) . c, in float; four dimensions
     * per pass over the block's running sums (they stay in L1). */
    private void scanBlock(int b, float[] w, float af, float[] est) {
        float[] acc = new float[BLOCK];
        byte[] c = codes[b];
        int i = 0;
        for (; i + 3 < dim; i += 4) {
            float w0 = w[i], w1 = w[i + 1], w2 = w[i + 2], w3 = w[i + 3];
            int o0 = i * BLOCK, o1 = o0 + BLOCK, o2 = o1 + BLOCK, o3 = o2 + BLOCK;
            for (int o = 0; o < BLOCK; o++) {
                acc[o] += (w0 * c[o0 + o] + w1 * c[o1 + o]) + (w2 * c[o2 + o] + w3 * c[o3 + o]);
            }
        }
        for (; i < dim; i++) {
            float wi = w[i];
            int off = i * BLOCK;
            for (int o = 0; o < BLOCK; o++) acc[o] += wi * c[off + o];
        }
        float[] nb = norm[b];
        int base = b * BLOCK;
        for (int o = 0; o < BLOCK; o++) {
            float e = af + nb[o] - 2f * acc[o];
            est[base + o] = e == e ? e : Float.POSITIVE_INFINITY;  // inf - inf: an unused row
        }
    }

    /** The k-th smallest of the first n values (1-based) by a bounded max-heap. */
    private static float kthSmallest(float[] values, int n, int k) {
        float[] heap = new float[k];
        int size = 0;
        for (int x = 0; x < n; x++) {
            float v = values[x];
            if (size == k && !(v < heap[0])) continue;
            size = offer(heap, size, v);
        }
        return size < k ? Float.POSITIVE_INFINITY : heap[0];
    }

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
}
