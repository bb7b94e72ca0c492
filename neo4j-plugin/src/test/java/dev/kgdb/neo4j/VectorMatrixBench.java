package dev.kgdb.neo4j;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;

/**
 * The in-memory exact search ({@link VectorMatrix}) at scale without a database: rows and
 * queries from two float32 .npy files (e.g. the 919,361 vectors of {@code kgdb bench scale
 * --entities 1000000} and its patterns' known names), the copy's build time, then per query
 * after a warm-up the search time, its screen time and rows visited, as JSON; every answer is
 * checked against a brute-force scan in double precision (the same distances, ties included).
 *
 * <pre>java -Xmx8g -cp target/classes:target/test-classes:$(cat cp.txt) dev.kgdb.neo4j.VectorMatrixBench rows.npy queries.npy [k] [rounds]</pre>
 */
public final class VectorMatrixBench {
    private VectorMatrixBench() {}

    public static void main(String[] args) throws IOException {
        float[][] rowsIn = read(Path.of(args[0]));
        float[][] queries = read(Path.of(args[1]));
        int k = args.length > 2 ? Integer.parseInt(args[2]) : 256;
        int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 5;
        int n = rowsIn.length, dim = rowsIn[0].length;
        long t0 = System.nanoTime();
        float[][] data = new float[(n + VectorMatrix.BLOCK - 1) / VectorMatrix.BLOCK][];
        long[] ids = new long[n];
        for (int b = 0; b < data.length; b++) data[b] = new float[VectorMatrix.BLOCK * dim];
        for (int r = 0; r < n; r++) {
            System.arraycopy(rowsIn[r], 0, data[r / VectorMatrix.BLOCK], (r % VectorMatrix.BLOCK) * dim, dim);
            ids[r] = r;
        }
        VectorMatrix m = VectorMatrix.fromRows("Entity", "embedding", dim, 0, data, ids, n, new BitSet(), t0);
        System.out.printf("{\"rows\": %d, \"dim\": %d, \"k\": %d, \"buildMs\": %.1f, \"screenDims\": %d}%n",
                n, dim, k, m.buildMs, m.screenDims);
        List<Double> total = new ArrayList<>(), screen = new ArrayList<>(), exact = new ArrayList<>();
        List<Integer> visited = new ArrayList<>(), screened = new ArrayList<>();
        for (int round = 0; round < rounds; round++) {
            for (float[] qf : queries) {
                double[] q = new double[dim];
                for (int i = 0; i < dim; i++) q[i] = qf[i];
                long s = System.nanoTime();
                List<VectorMatrix.Hit> hits = m.nearest(q, k, id -> { throw new AssertionError(); });
                double ms = (System.nanoTime() - s) / 1e6;
                if (round == 0) check(rowsIn, q, k, hits);
                if (round < rounds - 1 && rounds > 1) continue;  // warm-up rounds
                total.add(ms);
                screen.add(m.lastScreenMs);
                exact.add(m.lastExactMs);
                visited.add(m.lastCandidates);
                screened.add(m.lastScreened);
            }
        }
        System.out.printf("{\"queries\": %d, \"p50_ms\": %.2f, \"p90_ms\": %.2f, \"screen_p50_ms\": %.2f, "
                        + "\"rest_p50_ms\": %.2f, \"second_stage_p50\": %d, \"second_stage_p90\": %d, "
                        + "\"visited_p50\": %d, \"visited_p90\": %d}%n",
                total.size(), pct(total, 50), pct(total, 90), pct(screen, 50), pct(exact, 50),
                (int) pctI(screened, 50), (int) pctI(screened, 90),
                (int) pctI(visited, 50), (int) pctI(visited, 90));
    }

    /** The hits are the k nearest by exact L2 (and the ties at the k-th), as a full scan finds. */
    private static void check(float[][] rows, double[] q, int k, List<VectorMatrix.Hit> hits) {
        double[] d = new double[rows.length];
        for (int r = 0; r < rows.length; r++) {
            double acc = 0.0;
            for (int i = 0; i < q.length; i++) {
                double x = rows[r][i] - q[i];
                acc = acc + x * x;
            }
            d[r] = Math.sqrt(acc);
        }
        double[] sorted = d.clone();
        Arrays.sort(sorted);
        double kth = sorted[Math.min(k, rows.length) - 1];
        int expected = 0;
        for (double x : d) if (x <= kth) expected++;
        if (hits.size() != expected) throw new AssertionError(hits.size() + " hits, brute force " + expected);
        for (VectorMatrix.Hit h : hits) {
            if (d[(int) h.nodeId()] != h.distance() || h.distance() > kth) {
                throw new AssertionError("row " + h.nodeId() + " at " + h.distance() + ", brute force " + d[(int) h.nodeId()]);
            }
        }
    }

    private static double pct(List<Double> v, double p) {
        double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return a[(int) Math.min(a.length - 1, Math.round(p / 100 * (a.length - 1)))];
    }

    private static double pctI(List<Integer> v, double p) {
        return pct(v.stream().map(Integer::doubleValue).toList(), p);
    }

    /** A 2-d little-endian float32 .npy file (format 1.0 or 2.0, C order). */
    static float[][] read(Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            ByteBuffer head = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
            ch.read(head, 0);
            int major = head.get(6);
            long headerLen = major == 1 ? head.getShort(8) & 0xffff : head.getInt(8);
            long start = (major == 1 ? 10 : 12) + headerLen;
            ByteBuffer hb = ByteBuffer.allocate((int) headerLen);
            ch.read(hb, major == 1 ? 10 : 12);
            String header = new String(hb.array());
            if (!header.contains("'<f4'") || header.contains("'fortran_order': True")) {
                throw new IOException(path + ": not a C-order float32 array: " + header);
            }
            String shape = header.substring(header.indexOf("(") + 1, header.indexOf(")"));
            String[] parts = shape.split(",");
            int rows = Integer.parseInt(parts[0].trim()), cols = Integer.parseInt(parts[1].trim());
            float[][] out = new float[rows][cols];
            long pos = start;
            int chunk = 8192;
            for (int r = 0; r < rows; r += chunk) {
                int count = Math.min(chunk, rows - r);
                ByteBuffer buf = ByteBuffer.allocate(count * cols * 4).order(ByteOrder.LITTLE_ENDIAN);
                while (buf.hasRemaining()) {
                    int got = ch.read(buf, pos + buf.position());
                    if (got < 0) throw new IOException(path + ": truncated");
                }
                buf.flip();
                FloatBuffer fb = buf.asFloatBuffer();
                for (int i = 0; i < count; i++) fb.get(out[r + i]);
                pos += (long) count * cols * 4;
            }
            return out;
        }
    }
}
