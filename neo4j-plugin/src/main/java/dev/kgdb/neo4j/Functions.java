package dev.kgdb.neo4j;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.UserFunction;

/** kgdb's scalar functions: its version, and exact vector distances in double precision. */
public class Functions {
    static final String VERSION = readVersion();

    private static String readVersion() {
        try (InputStream in = Functions.class.getResourceAsStream("plugin.properties")) {
            Properties p = new Properties();
            if (in != null) p.load(in);
            return p.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    @UserFunction("kgdb.version")
    @Description("kgdb.version() - the version of the kgdb plugin (equal to kgdb's own).")
    public String version() {
        return VERSION;
    }

    @UserFunction("kgdb.l2")
    @Description("kgdb.l2(a, b) - exact L2 distance of two vectors (lists of numbers) in double "
            + "precision; null when either is null.")
    public Double l2(@Name("a") Object a, @Name("b") Object b) {
        if (a == null || b == null) return null;
        double[] x = Vectors.of(a, "kgdb.l2: a"), y = Vectors.of(b, "kgdb.l2: b");
        Vectors.sameSize(x, y, "kgdb.l2");
        return Vectors.l2(x, y);
    }

    @UserFunction("kgdb.cosine")
    @Description("kgdb.cosine(a, b) - cosine similarity of two vectors in [-1, 1], in double "
            + "precision; null when either is null.")
    public Double cosine(@Name("a") Object a, @Name("b") Object b) {
        if (a == null || b == null) return null;
        double[] x = Vectors.of(a, "kgdb.cosine: a"), y = Vectors.of(b, "kgdb.cosine: b");
        Vectors.sameSize(x, y, "kgdb.cosine");
        double c = Vectors.cosine(x, y);
        if (Double.isNaN(c)) {
            throw new IllegalArgumentException("kgdb.cosine: a vector of zeros has no direction");
        }
        return c;
    }
}
