package dev.kgdb.neo4j;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.neo4j.graphdb.Entity;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.NotFoundException;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Result;
import org.neo4j.graphdb.Transaction;
import org.neo4j.graphdb.schema.IndexDefinition;
import org.neo4j.graphdb.schema.IndexSetting;
import org.neo4j.graphdb.schema.IndexType;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;

/**
 * Nearest nodes / relationships by vector in one call: the vector index proposes (over-fetching
 * like kgdb's Cypher path: max(4k, 64) neighbours, since Lucene's HNSW uses the count as its
 * beam), then every proposal's stored vector is read from the store and its exact L2 distance
 * computed in double precision (the index's 1/(1+d^2) score loses distances below 2.4e-4).
 * Rows come closest first: the k nearest, and any further rows tied with the k-th, so that a
 * caller's {@code ORDER BY distance, id LIMIT k} picks exactly as the Cypher path does.
 */
public class Nearest {
    static final int BEAM_MIN = 64;
    static final long K_MAX = 100_000;

    @Context
    public Transaction tx;

    @Context
    public GraphDatabaseService db;

    public static class NodeHit {
        public Node node;
        public double distance;

        NodeHit(Node node, double distance) {
            this.node = node;
            this.distance = distance;
        }
    }

    public static class RelationshipHit {
        public Relationship relationship;
        public double distance;

        RelationshipHit(Relationship relationship, double distance) {
            this.relationship = relationship;
            this.distance = distance;
        }
    }

    private record Hit<T extends Entity>(T entity, double distance) {}

    @Procedure(name = "kgdb.nearestNodes", mode = Mode.READ)
    @Description("kgdb.nearestNodes(index, vector, k) - the k nodes nearest to vector by exact L2 "
            + "(double precision, from the stored vectors), proposed by the named vector index.")
    public Stream<NodeHit> nearestNodes(@Name("index") String index, @Name("vector") Object vector,
                                        @Name("k") Long k) {
        return search("kgdb.nearestNodes", index, vector, k, false, Node.class)
                .stream().map(h -> new NodeHit(h.entity(), h.distance()));
    }

    @Procedure(name = "kgdb.nearestRelationships", mode = Mode.READ)
    @Description("kgdb.nearestRelationships(index, vector, k) - the k relationships nearest to "
            + "vector by exact L2 (double precision), proposed by the named vector index.")
    public Stream<RelationshipHit> nearestRelationships(@Name("index") String index,
                                                        @Name("vector") Object vector,
                                                        @Name("k") Long k) {
        return search("kgdb.nearestRelationships", index, vector, k, true, Relationship.class)
                .stream().map(h -> new RelationshipHit(h.entity(), h.distance()));
    }

    public static class EntityRow {
        public long rank;
        public String id;
        public String name;
        public double distance;
    }

    @Procedure(name = "kgdb.nearestEntities", mode = Mode.READ)
    @Description("kgdb.nearestEntities(vector, topK = 10) - the entities nearest a vector by exact "
            + "L2, as flat columns (rank, id, name, distance) for BI tools.")
    public Stream<EntityRow> nearestEntities(@Name("vector") Object vector,
                                             @Name(value = "topK", defaultValue = "10") Long topK) {
        if (topK == null || topK < 1 || topK > Entities.MAX_TOP_K) {
            throw new IllegalArgumentException("kgdb: topK must be between 1 and " + Entities.MAX_TOP_K);
        }
        List<EntityRow> rows = new ArrayList<>();
        for (Hit<Node> hit : search("kgdb.nearestEntities", "kgdb_entity_embedding_vector", vector, topK,
                false, Node.class)) {
            EntityRow row = new EntityRow();
            Object id = hit.entity().getProperty("id", null), name = hit.entity().getProperty("name", null);
            row.id = id == null ? null : id.toString();
            row.name = name == null ? null : name.toString();
            row.distance = hit.distance();
            rows.add(row);
        }
        rows.sort(Comparator.comparingDouble((EntityRow r) -> r.distance)
                .thenComparing(r -> r.id, Comparator.nullsLast(SimGrag::compareCodePoints)));
        List<EntityRow> out = rows.subList(0, (int) Math.min(topK, rows.size()));
        for (int i = 0; i < out.size(); i++) out.get(i).rank = i + 1;
        return out.stream();
    }

    public static class IndexState {
        public String index;
        public String label;
        public String property;
        public String state;
        public long rows;
        public double buildMs;
        public double lastScreenMs;
        public double lastExactMs;
        public long lastRecomputed;
        public long lastCandidates;
        public long lastScreened;
        public long screenDims;
        /** Writes applied to the copy since its full build (each retires and appends the rows of
         * the nodes it touched), and the last one's time. */
        public long patches;
        public double lastPatchMs;
        /** The copy's kind (float32 or int8: kgdb.vectors.copy) and the bytes it holds. */
        public String copy;
        public long copyBytes;
        /** Whether the last search proved its top k exact (an int8 search whose bound left more
         * rows than its re-rank budget did not: its answer is the re-ranked rows' best). */
        public boolean lastProved;
    }

    @Procedure(name = "kgdb.vectorIndexes", mode = Mode.READ)
    @Description("kgdb.vectorIndexes() - each node vector index and the state of kgdb's exact "
            + "in-memory copy of it: current, stale (rebuilt by the next search), none (never "
            + "searched) or too large (searches use the index and re-rank exactly); the last "
            + "search's screen time, rows its second stage bounded (lastScreened), rows visited "
            + "(lastCandidates) and re-ranked from the store; writes patched in since the build; "
            + "the copy's kind (float32 or int8), its bytes, and whether the last search was proved exact.")
    public Stream<IndexState> vectorIndexes() {
        forgetDropped();
        List<IndexState> out = new ArrayList<>();
        for (IndexDefinition definition : tx.schema().getIndexes()) {
            if (definition.getIndexType() != IndexType.VECTOR || definition.isRelationshipIndex()) continue;
            IndexState row = new IndexState();
            row.index = definition.getName();
            row.label = definition.getLabels().iterator().next().name();
            row.property = definition.getPropertyKeys().iterator().next();
            VectorMatrix m = VectorMatrix.cached(db, row.index);
            if (m == null) {
                row.state = "none";
            } else {
                row.state = m.unusable != null ? "too large: " + m.unusable
                        : VectorMatrix.current(db, m) ? "current" : "stale";
                row.rows = m.live;
                row.patches = m.patches;
                row.lastPatchMs = m.lastPatchMs;
                row.buildMs = m.buildMs;
                row.lastScreenMs = m.lastScreenMs;
                row.lastExactMs = m.lastExactMs;
                row.lastRecomputed = m.lastRecomputed;
                row.lastCandidates = m.lastCandidates;
                row.lastScreened = m.lastScreened;
                row.screenDims = m.screenDims;
                row.copy = m.unusable != null ? null : m.kind();
                row.copyBytes = m.unusable != null ? 0 : m.bytes();
                row.lastProved = m.lastProved;
            }
            out.add(row);
        }
        out.sort(Comparator.comparing((IndexState r) -> r.index));
        return out.stream();
    }

    private <T extends Entity> List<Hit<T>> search(String proc, String index, Object vector, Long k,
                                                   boolean relationships, Class<T> kind) {
        Args args = new Args(proc);
        if (index == null) throw args.fail("index is null");
        args.count(k, K_MAX, "k");
        double[] query = Vectors.of(vector, proc + ": vector");
        IndexDefinition definition = vectorIndex(proc, index, relationships);
        String prop = definition.getPropertyKeys().iterator().next();
        if (!relationships) {
            List<Hit<T>> exact = exactNodes(proc, definition, prop, query, k, kind);
            if (exact != null) return exact;
        }
        long beam = Math.max(k * 4, BEAM_MIN);
        String call = relationships
                ? "CALL db.index.vector.queryRelationships($index, $beam, $vector) YIELD relationship AS e RETURN e"
                : "CALL db.index.vector.queryNodes($index, $beam, $vector) YIELD node AS e RETURN e";
        List<Hit<T>> hits = new ArrayList<>();
        try (Result result = tx.execute(call, Map.of("index", index, "beam", beam, "vector", query))) {
            while (result.hasNext()) {
                T entity = kind.cast(result.next().get("e"));
                Object stored = entity.getProperty(prop, null);
                if (stored == null) continue;
                double[] values = Vectors.of(stored, proc + ": stored " + prop);
                Vectors.sameSize(values, query, proc);
                hits.add(new Hit<>(entity, Vectors.l2(values, query)));
            }
        }
        hits.sort(Comparator.comparingDouble(Hit::distance));
        int end = (int) Math.min(k, hits.size());
        while (end < hits.size() && hits.get(end).distance() == hits.get(end - 1).distance()) end++;
        return hits.subList(0, end);
    }

    /**
     * The exact k nearest nodes from the in-memory matrix ({@link VectorMatrix}), or null where
     * it cannot be used (the caller asks the index). Exact distances come from the copy where it
     * holds the stored values exactly, else from the store. The copy is of committed data: where
     * this transaction has written, the rows of the nodes it touched are left out and those
     * nodes are read as it sees them (created, changed, deleted, relabelled), so the answer is
     * a brute-force scan's of the data this transaction sees.
     */
    @SuppressWarnings("deprecation")
    private <T extends Entity> List<Hit<T>> exactNodes(String proc, IndexDefinition definition,
                                                       String prop, double[] query, long k,
                                                       Class<T> kind) {
        Object dims = definition.getIndexConfiguration().get(IndexSetting.vector_Dimensions());
        if (!(dims instanceof Number d) || d.intValue() != query.length) return null;
        String label = definition.getLabels().iterator().next().name();
        long[] own = VectorMatrix.ownWrites(tx, label, prop);
        if (own == VectorMatrix.EVERYTHING) return scanNodes(label, prop, query, k, kind);
        VectorMatrix matrix = VectorMatrix.of(db, tx, own, definition.getName(), label, prop,
                query.length);
        if (matrix == null) return null;
        long[] touched = own == null ? new long[0] : own;
        List<Hit<T>> hits = new ArrayList<>();
        try {
            // the k nearest rows the transaction has not touched are among the k + touched
            // nearest rows of the copy (ties at the k-th included)
            int fetch = (int) Math.min(Integer.MAX_VALUE - 1, k + touched.length);
            for (VectorMatrix.Hit hit : matrix.nearest(query, fetch, id -> {
                if (java.util.Arrays.binarySearch(touched, id) >= 0) {
                    return Double.POSITIVE_INFINITY;  // left out below (maybe deleted here)
                }
                Object stored = tx.getNodeById(id).getProperty(prop, null);
                double[] values = Vectors.of(stored, proc + ": stored " + prop);
                Vectors.sameSize(values, query, proc);
                return Vectors.l2(values, query);
            })) {
                if (java.util.Arrays.binarySearch(touched, hit.nodeId()) >= 0) continue;
                hits.add(new Hit<>(kind.cast(tx.getNodeById(hit.nodeId())), hit.distance()));
            }
        } catch (NotFoundException | IllegalArgumentException e) {
            return null;  // a node deleted or changed by a commit racing this search: the index
        }
        Label wanted = Label.label(label);
        for (long id : touched) {
            Node node;
            try {
                node = tx.getNodeById(id);
            } catch (NotFoundException e) {
                continue;  // deleted by this transaction
            }
            Double distance = distance(node, wanted, prop, query);
            if (distance != null) hits.add(new Hit<>(kind.cast(node), distance));
        }
        return nearestOf(hits, k);
    }

    /** Every node of the label, read as this transaction sees it: where its own writes cannot
     * be told apart (the kernel's state is not readable), exact by brute force. */
    private <T extends Entity> List<Hit<T>> scanNodes(String label, String prop, double[] query,
                                                      long k, Class<T> kind) {
        Label wanted = Label.label(label);
        List<Hit<T>> hits = new ArrayList<>();
        try (ResourceIterator<Node> nodes = tx.findNodes(wanted)) {
            while (nodes.hasNext()) {
                Node node = nodes.next();
                Double distance = distance(node, wanted, prop, query);
                if (distance != null) hits.add(new Hit<>(kind.cast(node), distance));
            }
        }
        return nearestOf(hits, k);
    }

    /** The exact distance of a node the copy would hold (the label and a vector of the query's
     * size), else null. */
    private static Double distance(Node node, Label label, String prop, double[] query) {
        if (!node.hasLabel(label)) return null;
        Object stored = node.getProperty(prop, null);
        float[] row = new float[query.length];
        if (!VectorMatrix.toRow(stored, row)) return null;
        return Vectors.l2(Vectors.of(stored, "stored " + prop), query);
    }

    /** The k nearest hits and any tied with the k-th, closest first. */
    private static <T extends Entity> List<Hit<T>> nearestOf(List<Hit<T>> hits, long k) {
        hits.sort(Comparator.comparingDouble(Hit::distance));
        int end = (int) Math.min(k, hits.size());
        while (end > 0 && end < hits.size() && hits.get(end).distance() == hits.get(end - 1).distance()) end++;
        return hits.subList(0, end);
    }

    /** Frees the in-memory copies of node vector indexes dropped since ({@link VectorMatrix}). */
    private void forgetDropped() {
        VectorMatrix.forgetDropped(db, tx);
    }

    private IndexDefinition vectorIndex(String proc, String index, boolean relationships) {
        IndexDefinition definition;
        try {
            definition = tx.schema().getIndexByName(index);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(proc + ": there is no index named " + index);
        }
        if (definition.getIndexType() != IndexType.VECTOR
                || definition.isRelationshipIndex() != relationships) {
            throw new IllegalArgumentException(proc + ": " + index + " is not a vector index of "
                    + (relationships ? "relationships" : "nodes"));
        }
        return definition;
    }
}
