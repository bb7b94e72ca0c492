package dev.kgdb.neo4j;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;
import org.neo4j.procedure.TerminationGuard;

/**
 * One SimGRAG retrieval in one call: the candidate searches of every pattern text (entities per
 * name, relation types per phrase, entity types per type hint: {@link Nearest}'s exact
 * nearest-node search) and the top-k matching of every pattern component with the candidates
 * found ({@link SimGrag}'s {@code kgdb.simgrag.match}), so a question costs one statement and
 * one round trip instead of one for the searches and one per component. Each part is the
 * procedure it stands for, called in the same transaction: the rows are those of
 * kgdb's linker statement (cut per query to k by (distance, id)) and of
 * {@code kgdb.simgrag.match}.
 *
 * <p>The request (built by kgdb/cypher/link.py {@code simgrag_search}):
 * {@code searches}: a list of {index, key, shown, k, vectors} (the node vector index, the
 * properties returned as a candidate's id and name, k, one query vector per text);
 * {@code typeSearch}: null, or {search, require, ignore}: that search (entity types) runs only
 * where the label {@code require} is in use and some label in use is not in {@code ignore}, and
 * keeps only candidates whose id is a label in use (kgdb's linker: a type filters only where
 * entities carry types); {@code components}: kgdb.simgrag.match's component maps, where a
 * node's {@code candidates} may be {search, query} (that query's candidates), an edge's
 * {@code types} {search, queries} (each type at its best phrase's distance) and a node's
 * {@code labels} {search, queries} (the type candidates' ids). A component where a name or a
 * phrase found nothing is not matched (no subgraph can match it).
 *
 * <p>One row: {@code candidates} (maps search, query, id, name, distance, closest first per
 * query), {@code subgraphs} (maps component, gsd, ids, names, triples: kgdb.simgrag.match's rows
 * per component, in component order), and the time the searches and the matching took in the
 * server ({@code vectorMs}, {@code matchMs}), and whether the type search ran
 * ({@code typesSearched}).
 */
public class SimGragSearch {
    private static final Args ARGS = new Args("kgdb.simgrag.search");

    @Context
    public Transaction tx;

    @Context
    public GraphDatabaseService db;

    @Context
    public TerminationGuard guard;

    public static class Result {
        public List<Map<String, Object>> candidates;
        public List<Map<String, Object>> subgraphs;
        public double vectorMs;
        public double matchMs;
        /** Whether the entity-type search ran (see typeSearch). */
        public boolean typesSearched;
    }

    private record Found(String id, String name, double distance) {}

    @Procedure(name = "kgdb.simgrag.search", mode = Mode.READ)
    @Description("kgdb.simgrag.search(request, k) - one SimGRAG retrieval: the exact candidate "
            + "searches of a pattern's texts and the top-k matching of its components, in one call.")
    public Stream<Result> search(@Name("request") Map<String, Object> request, @Name("k") Long k) {
        if (request == null) throw ARGS.fail("request is null");
        ARGS.count(k, SimGrag.K_MAX, "k");
        // the whole answer is computed here, so a read racing a delete reruns it (Races)
        return Stream.of(Races.rerun("kgdb.simgrag.search", () -> searched(request, k)));
    }

    private Result searched(Map<String, Object> request, Long k) {
        long t0 = System.nanoTime();
        List<?> searches = ARGS.list(request.get("searches"), "searches");
        Map<?, ?> typeSearch = request.get("typeSearch") == null ? null
                : ARGS.map(request.get("typeSearch"), "typeSearch");
        int typed = typeSearch == null ? -1 : ARGS.index(typeSearch.get("search"), searches.size(), "typeSearch.search");
        Set<String> inUse = typeSearch == null ? Set.of() : labelsInUse();
        boolean typesApply = typeSearch != null && inUse.contains(ARGS.string(typeSearch.get("require"),
                "typeSearch.require")) && !onlyIgnored(inUse, ARGS.list(typeSearch.get("ignore"), "typeSearch.ignore"));
        List<List<List<Found>>> found = new ArrayList<>();
        List<Map<String, Object>> candidates = new ArrayList<>();
        for (int s = 0; s < searches.size(); s++) {
            String where = "searches[" + s + "]";
            Map<?, ?> search = ARGS.map(searches.get(s), where);
            List<?> vectors = ARGS.list(search.get("vectors"), where + ".vectors");
            List<List<Found>> perQuery = new ArrayList<>();
            boolean skip = s == typed && !typesApply;
            for (int q = 0; q < vectors.size(); q++) {
                List<Found> hits = skip ? List.of() : nearest(search, vectors.get(q), where + ".vectors[" + q + "]");
                if (s == typed) hits = hits.stream().filter(h -> inUse.contains(h.id())).toList();
                perQuery.add(hits);
                for (Found h : hits) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("search", (long) s);
                    row.put("query", (long) q);
                    row.put("id", h.id());
                    row.put("name", h.name());
                    row.put("distance", h.distance());
                    candidates.add(row);
                }
            }
            found.add(perQuery);
        }
        long t1 = System.nanoTime();
        List<?> components = ARGS.list(request.get("components"), "components");
        List<Map<String, Object>> subgraphs = new ArrayList<>();
        SimGrag matcher = new SimGrag();
        matcher.tx = tx;
        matcher.guard = guard;
        for (int c = 0; c < components.size(); c++) {
            Map<String, Object> component = resolve(ARGS.map(components.get(c), "components[" + c + "]"),
                    found, "components[" + c + "]");
            if (component == null) continue;  // a name or phrase linked to nothing
            final long index = c;
            matcher.match(component, k).forEach(m -> {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("component", index);
                row.put("gsd", m.gsd);
                row.put("ids", m.ids);
                row.put("names", m.names);
                row.put("triples", m.triples);
                subgraphs.add(row);
            });
        }
        Result out = new Result();
        out.candidates = candidates;
        out.subgraphs = subgraphs;
        out.vectorMs = (t1 - t0) / 1e6;
        out.matchMs = (System.nanoTime() - t1) / 1e6;
        out.typesSearched = typesApply;
        return out;
    }

    /** One query's candidates: the k nearest by exact L2, one per id, by (distance, id). */
    private List<Found> nearest(Map<?, ?> search, Object vector, String where) {
        String index = ARGS.string(search.get("index"), where + ": index");
        String key = ARGS.string(search.get("key"), where + ": key");
        String shown = ARGS.string(search.get("shown"), where + ": shown");
        long k = ARGS.count(search.get("k"), Nearest.K_MAX, where + ": k");
        Nearest nearest = new Nearest();
        nearest.tx = tx;
        nearest.db = db;
        Map<String, Found> best = new HashMap<>();
        List<Nearest.NodeHit> hits;
        try {
            hits = nearest.nearestNodes(index, vector, k).toList();
        } catch (IllegalArgumentException e) {
            throw ARGS.fail(where + ": " + e.getMessage());
        }
        for (Nearest.NodeHit hit : hits) {
            Object id = hit.node.getProperty(key, null);
            if (id == null) continue;
            Object name = hit.node.getProperty(shown, null);
            Found f = new Found(id.toString(), name == null ? null : name.toString(), hit.distance);
            best.merge(f.id(), f, (a, b) -> a.distance() <= b.distance() ? a : b);
        }
        List<Found> out = new ArrayList<>(best.values());
        out.sort((a, b) -> a.distance() != b.distance() ? Double.compare(a.distance(), b.distance())
                : SimGrag.compareCodePoints(a.id(), b.id()));
        return out.size() > k ? out.subList(0, (int) (long) k) : out;
    }

    /** The component with its references replaced by the candidates found; null if unmatchable. */
    private static Map<String, Object> resolve(Map<?, ?> component, List<List<List<Found>>> found,
                                               String where) {
        Map<String, Object> out = new HashMap<>();
        for (Map.Entry<?, ?> e : component.entrySet()) out.put(String.valueOf(e.getKey()), e.getValue());
        List<Object> nodes = new ArrayList<>();
        List<?> given = ARGS.list(component.get("nodes"), where + ".nodes");
        for (int i = 0; i < given.size(); i++) {
            String at = where + ".nodes[" + i + "]";
            Map<String, Object> node = new HashMap<>();
            for (Map.Entry<?, ?> e : ARGS.map(given.get(i), at).entrySet()) node.put(String.valueOf(e.getKey()), e.getValue());
            if (node.get("candidates") instanceof Map<?, ?> ref) {
                List<Map<String, Object>> cands = new ArrayList<>();
                for (Found f : referred(ref, found, at + ".candidates").get(0)) {
                    cands.add(Map.of("id", f.id(), "d", f.distance()));
                }
                if (cands.isEmpty()) return null;
                node.put("candidates", cands);
            }
            if (node.get("labels") instanceof Map<?, ?> ref) {
                Set<String> labels = new TreeSet<>(SimGrag::compareCodePoints);
                for (List<Found> hits : referred(ref, found, at + ".labels")) {
                    for (Found f : hits) labels.add(f.id());
                }
                node.put("labels", new ArrayList<>(labels));
            }
            nodes.add(node);
        }
        out.put("nodes", nodes);
        List<Object> edges = new ArrayList<>();
        List<?> givenEdges = ARGS.list(component.get("edges"), where + ".edges");
        for (int j = 0; j < givenEdges.size(); j++) {
            String at = where + ".edges[" + j + "]";
            Map<String, Object> edge = new HashMap<>();
            for (Map.Entry<?, ?> e : ARGS.map(givenEdges.get(j), at).entrySet()) edge.put(String.valueOf(e.getKey()), e.getValue());
            if (edge.get("types") instanceof Map<?, ?> ref) {
                Map<String, Double> best = new HashMap<>();
                for (List<Found> hits : referred(ref, found, at + ".types")) {
                    for (Found f : hits) best.merge(f.id(), f.distance(), Math::min);
                }
                if (best.isEmpty()) return null;
                List<Map<String, Object>> types = new ArrayList<>();
                best.forEach((type, d) -> types.add(Map.of("type", type, "d", d)));
                edge.put("types", types);
            }
            edges.add(edge);
        }
        out.put("edges", edges);
        return out;
    }

    /** The candidate lists a reference {search, query} or {search, queries} names. */
    private static List<List<Found>> referred(Map<?, ?> ref, List<List<List<Found>>> found, String where) {
        int s = ARGS.index(ref.get("search"), found.size(), where + ".search");
        List<List<Found>> perQuery = found.get(s);
        List<List<Found>> out = new ArrayList<>();
        if (ref.containsKey("query")) {
            out.add(perQuery.get(ARGS.index(ref.get("query"), perQuery.size(), where + ".query")));
        } else {
            List<?> queries = ARGS.list(ref.get("queries"), where + ".queries");
            for (int q = 0; q < queries.size(); q++) {
                out.add(perQuery.get(ARGS.index(queries.get(q), perQuery.size(), where + ".queries[" + q + "]")));
            }
        }
        return out;
    }

    private Set<String> labelsInUse() {
        Set<String> out = new HashSet<>();
        for (Label label : tx.getAllLabelsInUse()) out.add(label.name());
        return out;
    }

    private static boolean onlyIgnored(Set<String> inUse, List<?> ignore) {
        Set<String> rest = new HashSet<>(inUse);
        for (Object x : ignore) rest.remove(String.valueOf(x));
        return rest.isEmpty();
    }
}
