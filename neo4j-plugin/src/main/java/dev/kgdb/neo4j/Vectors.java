package dev.kgdb.neo4j;

import java.util.List;

/**
 * Vectors as kgdb stores them (LIST&lt;FLOAT&gt; properties, float[] or double[] in the store) and
 * the exact distances in double precision. Every bad value is an {@link IllegalArgumentException}
 * whose one-line message names the place ({@code where}) and the cause.
 */
final class Vectors {
    private Vectors() {}

    /** The values of a vector argument or property, checked: a list or array of finite numbers. */
    static double[] of(Object value, String where) {
        if (value == null) {
            throw new IllegalArgumentException(where + " is null, expected a list of numbers");
        }
        double[] out;
        if (value instanceof double[] d) {
            out = d.clone();
        } else if (value instanceof float[] f) {
            out = new double[f.length];
            for (int i = 0; i < f.length; i++) out[i] = f[i];
        } else if (value instanceof long[] l) {
            out = new double[l.length];
            for (int i = 0; i < l.length; i++) out[i] = l[i];
        } else if (value instanceof int[] l) {
            out = new double[l.length];
            for (int i = 0; i < l.length; i++) out[i] = l[i];
        } else if (value instanceof short[] l) {
            out = new double[l.length];
            for (int i = 0; i < l.length; i++) out[i] = l[i];
        } else if (value instanceof byte[] l) {
            out = new double[l.length];
            for (int i = 0; i < l.length; i++) out[i] = l[i];
        } else if (value instanceof List<?> list) {
            out = new double[list.size()];
            for (int i = 0; i < out.length; i++) {
                Object x = list.get(i);
                if (!(x instanceof Number n)) {
                    throw new IllegalArgumentException(where + "[" + i + "] is "
                            + (x == null ? "null" : x.getClass().getSimpleName()) + ", expected a number");
                }
                out[i] = n.doubleValue();
            }
        } else {
            throw new IllegalArgumentException(where + " is a " + value.getClass().getSimpleName()
                    + ", expected a list of numbers");
        }
        if (out.length == 0) {
            throw new IllegalArgumentException(where + " is an empty list");
        }
        for (int i = 0; i < out.length; i++) {
            if (!Double.isFinite(out[i])) {
                throw new IllegalArgumentException(where + "[" + i + "] is " + out[i] + ", not a finite number");
            }
        }
        return out;
    }

    static void sameSize(double[] a, double[] b, String where) {
        if (a.length != b.length) {
            throw new IllegalArgumentException(where + ": vectors of different sizes (" + a.length
                    + " and " + b.length + ")");
        }
    }

    /**
     * sqrt of the sum of squared differences, added in index order: the same double arithmetic
     * as the Cypher {@code reduce()} it replaces, so the two give bit-identical distances.
     */
    static double l2(double[] a, double[] b) {
        double acc = 0.0;
        for (int i = 0; i < a.length; i++) {
            double d = a[i] - b[i];
            acc = acc + d * d;
        }
        return Math.sqrt(acc);
    }

    /**
     * Cosine similarity in [-1, 1]; NaN when a vector is all zeros (the caller decides). Scale
     * safe: each vector is divided by its largest magnitude first, so that squares of very small
     * (1e-200) or very large (1e200) values neither underflow to a zero norm nor overflow to an
     * infinite one; the cosine does not change under scaling.
     */
    static double cosine(double[] a, double[] b) {
        double sa = maxAbs(a), sb = maxAbs(b);
        if (sa == 0.0 || sb == 0.0) return Double.NaN;
        double dot = 0.0, na = 0.0, nb = 0.0;
        for (int i = 0; i < a.length; i++) {
            double x = a[i] / sa, y = b[i] / sb;
            dot += x * y;
            na += x * x;
            nb += y * y;
        }
        double c = dot / (Math.sqrt(na) * Math.sqrt(nb));
        return Math.max(-1.0, Math.min(1.0, c));
    }

    private static double maxAbs(double[] v) {
        double m = 0.0;
        for (double x : v) m = Math.max(m, Math.abs(x));
        return m;
    }
}
