package dev.kgdb.neo4j;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.stream.Stream;
import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;
import org.neo4j.procedure.TerminationGuard;

/**
 * SimGRAG's top-k matching of one connected pattern component by Graph Semantic Distance
 * (paper section 5.2, Algorithm 1), in memory over the store's own traversal API.
 *
 * <p>A best-first search over partial mappings ordered by their lower bound (equations 9-11:
 * the distances matched so far plus, for every known item still unmatched, its smallest
 * candidate distance), then deepest first (a complete mapping before any partial one), then in
 * the order they were pushed. A complete mapping is taken only after every mapping with a
 * smaller bound, so its GSD is among the k smallest; within a plateau of equal bounds the
 * search runs depth first and stops as soon as k are complete, however many subgraphs tie
 * (a pattern through a hub can have tens of thousands of paths at one GSD). Among equal GSDs
 * the subgraphs returned are the first found: in the candidates' order (distance, then id)
 * and the store's relationship order, deterministic for the same store. GSDs are summed in
 * canonical order (nodes by index, then edges by index, unknown items skipped) in double
 * precision, bit-identical to kgdb's Python and Cypher engines.
 *
 * <p>The component map (built by kgdb/cypher/pattern.py {@code native_component}): {@code label},
 * {@code anchor}, {@code order} (edge indexes, each with one end already bound when it comes),
 * {@code nodes} ({@code candidates}: list of {id, d} or null for an unknown node; {@code name};
 * {@code labels}: any of), {@code edges} ({@code source}, {@code target}, {@code directed},
 * {@code types}: list of {type, d} or null for any type), {@code differ} (n x n booleans: which
 * nodes must map to different entities), optional {@code maxStates}.
 */
public class SimGrag {
    static final long MAX_STATES = 5_000_000;
    static final long K_MAX = 100_000;
    private static final String NAME = "kgdb.simgrag.match";
    private static final Args ARGS = new Args(NAME);

    @Context
    public Transaction tx;

    @Context
    public TerminationGuard guard;

    public static class Match {
        public double gsd;
        public List<String> ids;
        public List<String> names;
        public List<List<String>> triples;
    }

    @Procedure(name = "kgdb.simgrag.match", mode = Mode.READ)
    @Description("kgdb.simgrag.match(component, k) - the top-k subgraphs matching one linked "
            + "pattern component by Graph Semantic Distance (SimGRAG), searched in memory.")
    public Stream<Match> match(@Name("component") Map<String, Object> component,
                               @Name("k") Long k) {
        if (component == null) throw ARGS.fail("component is null");
        int top = (int) ARGS.count(k, K_MAX, "k");  // K_MAX fits an int
        // a read racing another transaction's delete reruns the search (Races)
        return Races.rerun(NAME, () -> new Search(component).run(top)).stream();
    }

    // ------------------------------------------------------------------ parsing helpers
    /** id -> distance from a list of {key: id, d: distance}; null for an unknown item. */
    private static Map<String, Double> distances(Object value, String key, String where) {
        List<?> items = ARGS.listOrNull(value, where);
        if (items == null) return null;
        Map<String, Double> out = new HashMap<>(items.size() * 2);
        for (int i = 0; i < items.size(); i++) {
            Map<?, ?> item = ARGS.map(items.get(i), where + "[" + i + "]");
            String id = ARGS.string(item.get(key), where + "[" + i + "]." + key);
            Object d = item.get("d");
            if (!(d instanceof Number n) || !Double.isFinite(n.doubleValue()) || n.doubleValue() < 0) {
                throw ARGS.fail(where + "[" + i + "].d must be a finite "
                        + "non-negative number, not " + d);
            }
            out.merge(id, n.doubleValue(), Math::min);
        }
        return out;
    }

    private static Double minimum(Map<String, Double> d) {
        if (d == null) return null;
        double m = Double.POSITIVE_INFINITY;
        for (double x : d.values()) m = Math.min(m, x);
        return m;
    }

    /** Python's and Neo4j's string order: by code point. */
    static int compareCodePoints(String a, String b) {
        int i = 0, j = 0;
        while (i < a.length() && j < b.length()) {
            int ca = a.codePointAt(i), cb = b.codePointAt(j);
            if (ca != cb) return Integer.compare(ca, cb);
            i += Character.charCount(ca);
            j += Character.charCount(cb);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }

    /** A partial or complete mapping. */
    private static final class State implements Comparable<State> {
        final double bound;
        final long seq;
        final Node[] nodes;
        final String[] ids;
        final Double[] nodeD;
        final Relationship[] rels;
        final Double[] edgeD;
        final int step;

        State(double bound, long seq, Node[] nodes, String[] ids, Double[] nodeD,
              Relationship[] rels, Double[] edgeD, int step) {
            this.bound = bound;
            this.seq = seq;
            this.nodes = nodes;
            this.ids = ids;
            this.nodeD = nodeD;
            this.rels = rels;
            this.edgeD = edgeD;
            this.step = step;
        }

        @Override
        public int compareTo(State o) {
            int c = Double.compare(bound, o.bound);
            if (c != 0) return c;
            c = Integer.compare(o.step, step);  // deepest first
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    private final class Search {
        final Label label;
        final int n, m, anchor;
        final int[] order, src, dst;
        final boolean[] directed;
        final Map<String, Double>[] nodeCand, edgeCand;
        final Double[] nodeMin, edgeMin;
        final String[] nodeName;
        final Label[][] nodeLabels;
        final RelationshipType[][] edgeTypes;
        final boolean[][] differ;
        final long maxStates;
        final PriorityQueue<State> heap = new PriorityQueue<>();
        long seq = 0;

        @SuppressWarnings("unchecked")
        Search(Map<String, Object> c) {
            label = Label.label(ARGS.string(c.get("label"), "label"));
            List<?> nodes = ARGS.list(c.get("nodes"), "nodes");
            List<?> edges = ARGS.list(c.get("edges"), "edges");
            n = nodes.size();
            m = edges.size();
            if (n == 0) throw ARGS.fail("nodes is empty");
            anchor = ARGS.index(c.get("anchor"), n, "anchor");
            nodeCand = new Map[n];
            nodeMin = new Double[n];
            nodeName = new String[n];
            nodeLabels = new Label[n][];
            for (int i = 0; i < n; i++) {
                Map<?, ?> node = ARGS.map(nodes.get(i), "nodes[" + i + "]");
                nodeCand[i] = distances(node.get("candidates"), "id", "nodes[" + i + "].candidates");
                nodeMin[i] = minimum(nodeCand[i]);
                nodeName[i] = ARGS.stringOrNull(node.get("name"), "nodes[" + i + "].name");
                List<?> labels = ARGS.listOrNull(node.get("labels"), "nodes[" + i + "].labels");
                nodeLabels[i] = new Label[labels == null ? 0 : labels.size()];
                for (int l = 0; l < nodeLabels[i].length; l++) {
                    nodeLabels[i][l] = Label.label(ARGS.string(labels.get(l), "nodes[" + i + "].labels[" + l + "]"));
                }
            }
            if (nodeCand[anchor] == null) {
                throw ARGS.fail("the anchor node " + anchor + " has no candidates");
            }
            src = new int[m];
            dst = new int[m];
            directed = new boolean[m];
            edgeCand = new Map[m];
            edgeMin = new Double[m];
            edgeTypes = new RelationshipType[m][];
            for (int j = 0; j < m; j++) {
                Map<?, ?> edge = ARGS.map(edges.get(j), "edges[" + j + "]");
                src[j] = ARGS.index(edge.get("source"), n, "edges[" + j + "].source");
                dst[j] = ARGS.index(edge.get("target"), n, "edges[" + j + "].target");
                directed[j] = Boolean.TRUE.equals(edge.get("directed"));
                edgeCand[j] = distances(edge.get("types"), "type", "edges[" + j + "].types");
                edgeMin[j] = minimum(edgeCand[j]);
                if (edgeCand[j] != null) {
                    edgeTypes[j] = edgeCand[j].keySet().stream().sorted()
                            .map(RelationshipType::withName).toArray(RelationshipType[]::new);
                }
            }
            List<?> ord = ARGS.list(c.get("order"), "order");
            if (ord.size() != m) throw ARGS.fail("order must list every edge once");
            order = new int[m];
            boolean[] bound = new boolean[n], used = new boolean[m];
            bound[anchor] = true;
            for (int s = 0; s < m; s++) {
                int j = ARGS.index(ord.get(s), m, "order[" + s + "]");
                if (used[j] || !(bound[src[j]] || bound[dst[j]])) {
                    throw ARGS.fail("order[" + s + "] = " + j
                            + " repeats an edge or has no bound end");
                }
                used[j] = true;
                bound[src[j]] = bound[dst[j]] = true;
                order[s] = j;
            }
            List<?> dif = ARGS.list(c.get("differ"), "differ");
            if (dif.size() != n) throw ARGS.fail("differ must have one row per node");
            differ = new boolean[n][n];
            for (int i = 0; i < n; i++) {
                List<?> row = ARGS.list(dif.get(i), "differ[" + i + "]");
                if (row.size() != n) throw ARGS.fail("differ[" + i + "] must have one value per node");
                for (int b = 0; b < n; b++) differ[i][b] = Boolean.TRUE.equals(row.get(b));
            }
            Object max = c.get("maxStates");
            maxStates = max instanceof Long l && l > 0 ? l : MAX_STATES;
        }

        double bound(Double[] nodeD, Double[] edgeD) {
            Double total = null;
            for (int i = 0; i < n; i++) {
                Double d = nodeD[i] != null ? nodeD[i] : nodeMin[i];
                if (d != null) total = total == null ? d : total + d;
            }
            for (int j = 0; j < m; j++) {
                Double d = edgeD[j] != null ? edgeD[j] : edgeMin[j];
                if (d != null) total = total == null ? d : total + d;
            }
            return total == null ? 0.0 : total;
        }

        void push(Node[] nodes, String[] ids, Double[] nodeD, Relationship[] rels, Double[] edgeD, int step) {
            if (seq >= maxStates) {
                throw new IllegalStateException(NAME + ": more than " + maxStates
                        + " partial matches; narrow the pattern or lower k(n)");
            }
            heap.add(new State(bound(nodeD, edgeD), seq++, nodes, ids, nodeD, rels, edgeD, step));
        }

        boolean fits(Node node, int i) {
            if (!node.hasLabel(label)) return false;
            if (nodeName[i] != null && !nodeName[i].equals(node.getProperty("name", null))) return false;
            if (nodeLabels[i].length == 0) return true;
            for (Label l : nodeLabels[i]) {
                if (node.hasLabel(l)) return true;
            }
            return false;
        }

        List<Match> run(int k) {
            // Anchor candidates are looked up lazily, best first: one is pushed only when its
            // bound is not above the best state's (floating-point sums are monotone in each
            // term, so candidates sorted by distance are sorted by bound), so a search that
            // ends among the first candidates never reads the others.
            List<Map.Entry<String, Double>> anchors = sortedCandidates(nodeCand[anchor]);
            int next = 0;
            List<Match> results = new ArrayList<>();
            long popped = 0;
            while (results.size() < k) {
                while (next < anchors.size()
                        && (heap.isEmpty() || anchorBound(anchors.get(next).getValue()) <= heap.peek().bound)) {
                    if ((next & 1023) == 1023) guard.check();
                    pushAnchor(anchors.get(next++));
                }
                if (heap.isEmpty()) break;
                State st = heap.poll();
                if ((++popped & 1023) == 0) guard.check();
                if (st.step == m) {
                    results.add(result(st));
                } else {
                    expand(st);
                }
            }
            return results;
        }

        double anchorBound(double d) {
            Double[] nodeD = new Double[n];
            nodeD[anchor] = d;
            return bound(nodeD, new Double[m]);
        }

        void pushAnchor(Map.Entry<String, Double> c) {
            try (ResourceIterator<Node> found = tx.findNodes(label, "id", c.getKey())) {
                while (found.hasNext()) {
                    Node node = found.next();
                    if (!fits(node, anchor)) continue;
                    Node[] nodes = new Node[n];
                    String[] ids = new String[n];
                    Double[] nodeD = new Double[n];
                    nodes[anchor] = node;
                    ids[anchor] = c.getKey();
                    nodeD[anchor] = c.getValue();
                    push(nodes, ids, nodeD, new Relationship[m], new Double[m], 0);
                }
            }
        }

        void expand(State st) {
            int j = order[st.step];
            int u = st.nodes[src[j]] != null ? src[j] : dst[j];
            int w = u == src[j] ? dst[j] : src[j];
            Node head = st.nodes[u];
            boolean targetBound = st.nodes[w] != null;
            Direction dir = !directed[j] ? Direction.BOTH
                    : (u == src[j] ? Direction.OUTGOING : Direction.INCOMING);
            Iterable<Relationship> rels = edgeTypes[j] == null ? head.getRelationships(dir)
                    : head.getRelationships(dir, edgeTypes[j]);
            long seen = 0;
            outer:
            for (Relationship r : rels) {
                if ((++seen & 4095) == 0) guard.check();
                for (Relationship used : st.rels) {
                    if (used != null && used.equals(r)) continue outer;
                }
                Node other = r.getOtherNode(head);
                String otherId;
                Double d = null;
                if (targetBound) {
                    if (!other.equals(st.nodes[w])) continue;
                    otherId = st.ids[w];
                } else {
                    if (!fits(other, w)) continue;
                    otherId = null;  // read when the mapping is returned
                    if (nodeCand[w] != null) {
                        otherId = idOf(other);
                        d = nodeCand[w].get(otherId);
                        if (d == null) continue;
                    }
                    for (int b = 0; b < n; b++) {
                        if (st.nodes[b] != null && differ[w][b] && st.nodes[b].equals(other)) continue outer;
                    }
                }
                Node[] nodes = st.nodes;
                String[] ids = st.ids;
                Double[] nodeD = st.nodeD;
                if (!targetBound) {
                    nodes = Arrays.copyOf(nodes, n);
                    ids = Arrays.copyOf(ids, n);
                    nodeD = Arrays.copyOf(nodeD, n);
                    nodes[w] = other;
                    ids[w] = otherId;
                    nodeD[w] = d;
                }
                Relationship[] newRels = Arrays.copyOf(st.rels, m);
                Double[] edgeD = Arrays.copyOf(st.edgeD, m);
                newRels[j] = r;
                edgeD[j] = edgeCand[j] != null ? edgeCand[j].get(r.getType().name()) : null;
                push(nodes, ids, nodeD, newRels, edgeD, st.step + 1);
            }
        }

        Match result(State st) {
            Match out = new Match();
            out.gsd = st.bound;
            out.ids = new ArrayList<>(n);
            for (int i = 0; i < n; i++) out.ids.add(st.ids[i] != null ? st.ids[i] : idOf(st.nodes[i]));
            out.names = new ArrayList<>(n);
            for (Node node : st.nodes) {
                Object name = node.getProperty("name", null);
                out.names.add(name == null ? null : name.toString());
            }
            out.triples = new ArrayList<>(m);
            for (Relationship r : st.rels) {
                out.triples.add(Arrays.asList(idOf(r.getStartNode()), r.getType().name(), idOf(r.getEndNode())));
            }
            return out;
        }
    }

    private static List<Map.Entry<String, Double>> sortedCandidates(Map<String, Double> cands) {
        List<Map.Entry<String, Double>> out = new ArrayList<>(cands.entrySet());
        out.sort(Map.Entry.<String, Double>comparingByValue().thenComparing(Map.Entry.comparingByKey()));
        return out;
    }

    private static String idOf(Node node) {
        Object id = node.getProperty("id", null);
        return id == null ? "" : id.toString();
    }
}
