package dev.kgdb.neo4j;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Result;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;

/**
 * What BI tools call, natively (no APOC): {@code kgdb.entities(text, topK)}, the same flat
 * columns and rows as the {@code custom.kgdb.entities} APOC custom procedure whose Cypher body
 * kgdb/cypher/procedures.py builds (entities_by_text), proven equal by
 * tests/live/test_neo4j_plugin.py.
 */
public class Entities {
    static final long MAX_TOP_K = 1000;
    static final int MAX_TEXT = 1000;
    static final String ENTITY = "Entity";
    static final String INDEX = "kgdb_entity_text_fulltext";
    private static final Pattern LUCENE_SPECIAL = Pattern.compile("([+\\-&|!(){}\\[\\]^\"~*?:\\\\/])");

    @Context
    public Transaction tx;

    public static class EntityRow {
        public long rank;
        public String id;
        public String name;
        public String type;
        public double score;
    }

    private record Hit(Node node, String id, String name, double score, boolean exact) {}

    @Procedure(name = "kgdb.entities", mode = Mode.READ)
    @Description("kgdb.entities(text, topK = 10) - entities by name, typo-tolerant (each word "
            + "allows two edits, full-text index); an exact name (any case) first.")
    public Stream<EntityRow> entities(@Name("text") String text,
                                      @Name(value = "topK", defaultValue = "10") Long topK) {
        if (topK == null || topK < 1 || topK > MAX_TOP_K) {
            throw new IllegalArgumentException("kgdb: topK must be between 1 and " + MAX_TOP_K);
        }
        if (text == null || text.length() > MAX_TEXT) {
            throw new IllegalArgumentException("kgdb: text must be given, at most " + MAX_TEXT + " characters");
        }
        String trimmed = text.strip();
        List<String> words = new ArrayList<>();
        for (String w : trimmed.split(" ")) {
            if (!w.isEmpty()) words.add(LUCENE_SPECIAL.matcher(w).replaceAll("\\\\$1") + "~");
        }
        if (words.isEmpty()) return Stream.empty();
        String wanted = trimmed.toLowerCase(Locale.ROOT);
        Label entity = Label.label(ENTITY);
        List<Hit> hits = new ArrayList<>();
        try (Result result = tx.execute(
                "CALL db.index.fulltext.queryNodes($index, $query) YIELD node, score RETURN node, score",
                Map.of("index", INDEX, "query", String.join(" OR ", words)))) {
            while (result.hasNext()) {
                Map<String, Object> row = result.next();
                Node node = (Node) row.get("node");
                if (!node.hasLabel(entity)) continue;
                Object id = node.getProperty("id", null), name = node.getProperty("name", null);
                hits.add(new Hit(node, id == null ? null : id.toString(), name == null ? null : name.toString(),
                        ((Number) row.get("score")).doubleValue(),
                        name != null && name.toString().toLowerCase(Locale.ROOT).equals(wanted)));
            }
        }
        hits.sort(Comparator.comparing((Hit h) -> !h.exact())
                .thenComparing(Hit::score, Comparator.reverseOrder())
                .thenComparing(Hit::id, Comparator.nullsLast(SimGrag::compareCodePoints)));
        List<EntityRow> out = new ArrayList<>();
        for (Hit h : hits.subList(0, (int) Math.min(topK, hits.size()))) {
            EntityRow row = new EntityRow();
            row.rank = out.size() + 1;
            row.id = h.id();
            row.name = h.name();
            row.type = ENTITY;
            for (Label l : h.node().getLabels()) {
                if (!l.name().equals(ENTITY)) {
                    row.type = l.name();
                    break;
                }
            }
            row.score = h.score();
            out.add(row);
        }
        return out.stream();
    }
}
