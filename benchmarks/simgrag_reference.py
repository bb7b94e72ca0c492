"""kgdb's SimGRAG retrieval side by side with the SimGRAG authors' own retriever.

The authors' code (https://github.com/YZ-Cai/SimGRAG, not part of kgdb: give its checkout
with ``--code``) keeps the knowledge graph in a Python dict, finds candidates in Milvus
(HNSW, M 64, efConstruction 512, ef 8 k, L2) and matches with a greedy DFS in Python
(``src/retriever.py``). This script runs *their* ``Retriever`` and *their* ``Indexer``
unchanged, with three substitutions their README invites ("replace the components with your
own preference"):

* the embedding model is kgdb's (all-MiniLM-L6-v2, 384 dims; their default is nomic-embed,
  768), so both sides see the same vectors;
* Milvus is Milvus Lite (``pymilvus`` 2.4 with ``milvus-lite`` 2.4, the Milvus engine in a
  local file; their code talks to a Milvus server at localhost:19530; pymilvus 2.5's search
  results no longer pass their ``json.dumps``), with their schema at 384 dims and a FLAT index
  (exact) in place of their HNSW, which Milvus Lite does not have;
* the graph's relations are named as kgdb embeds them (``directed by``, not ``directed_by``);
* the query graphs are MetaQA's oracle patterns (:func:`kgdb.retrieve.metaqa.oracle_triples`,
  the ones kgdb retrieves) instead of an LLM's rewrite.

Then kgdb on the embedded FalkorDB and/or Neo4j and the reference answer the same questions
in one run, alternating question by question (``kgdb bench retrieve --engines``'s
:func:`kgdb.bench.bench_side_by_side`: warm-up, phase split, paired ratios, whether the
top-k GSDs agree). The reference's phases are its own timers: ``vector`` its
``vector_search_time``, ``match`` its ``graph_search_time``.

Usage (pymilvus and milvus-lite are not kgdb dependencies)::

    pip install "pymilvus==2.4.15" "milvus-lite==2.4.12"
    git clone https://github.com/YZ-Cai/SimGRAG /tmp/SimGRAG
    export KGDB_GRAPH=metaqa            # the MetaQA graph kgdb loaded (README: MetaQA)
    eval "$(kgdb neo4j start)"          # for --engines ...,neo4j
    python benchmarks/simgrag_reference.py --code /tmp/SimGRAG \\
        --kb data/metaqa/kb.txt --questions data/metaqa/dev_1hop.tsv ... --limit 200 \\
        --engines falkordb,neo4j --json

The reference's Milvus Lite file is built once per knowledge graph by their Indexer (in
``--milvus``, default ``$KGDB_HOME/simgrag-reference``; 43k MetaQA names took 6-10 min to
insert on 2 busy cores).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

from kgdb.bench import bench_side_by_side
from kgdb.config import Settings
from kgdb.embed import default_embedder
from kgdb.engine import connect
from kgdb.errors import KgdbError
from kgdb.retrieve.metaqa import Outcome, answer_matches, oracle_triples, read_questions
from kgdb.schema.model import humanize

DIM = 384
"""all-MiniLM-L6-v2's dimension (kgdb's embeddings)."""
FORMAT = "minilm-384-humanized-1"
"""What the Milvus Lite file holds besides the knowledge graph (part of its name)."""


class ReferenceEngine:
    """The SimGRAG authors' Retriever over their dict KG and Milvus Lite (see the module
    docstring); an engine of :func:`kgdb.bench.bench_side_by_side`."""

    gsd_tolerance = 5e-3
    """Milvus computes squared L2 in float32 and the authors take its square root: a node
    equal to the query's name comes back at about 1e-3 (kgdb: below 1e-6), once per named
    node of the pattern."""

    def __init__(self, code: Path, kb: Path, milvus: Path, embedder: Any, *,
                 k: int, k_nodes: int, k_relations: int) -> None:
        if not (code / "src" / "retriever.py").is_file():
            raise KgdbError(f"--code {code}: no src/retriever.py (a checkout of "
                            "https://github.com/YZ-Cai/SimGRAG)")
        try:
            from pymilvus import DataType, MilvusClient
        except ImportError:
            raise KgdbError("the reference needs pymilvus with milvus-lite: "
                            'pip install "pymilvus==2.4.15" "milvus-lite==2.4.12"') from None
        class Embeddings:
            """Their EmbeddingModel (src/embedding_model.py, which loads sentence-transformers
            and nomic-embed), encoding with kgdb's (cached) embedder instead."""

            def __init__(self, configs: Any) -> None:
                pass

            def encode(self, texts: list[str], batch_size: int = 64,
                       show_progress_bar: bool = False) -> Any:
                return embedder.embed(list(texts))

        embedding_module = types.ModuleType("src.embedding_model")
        embedding_module.EmbeddingModel = Embeddings  # type: ignore[attr-defined]
        sys.modules["src.embedding_model"] = embedding_module
        sys.path.insert(0, str(code))
        import src.indexer as indexer_module  # the authors' code
        import src.retriever as retriever_module
        import src.vecdb as vecdb

        # The authors' Indexer only compares row counts: one file per knowledge graph
        milvus.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(kb.read_bytes() + FORMAT.encode()).hexdigest()[:16]
        client = MilvusClient(uri=str(milvus / f"{digest}.db"))

        class LiteStore(vecdb.VectorStore):
            """Their VectorStore on Milvus Lite at 384 dims (their _load with DIM)."""

            def __init__(self, name: str) -> None:
                self.client = client
                self.name = name
                self._load()

            def _load(self) -> None:
                if self.name not in self.client.list_collections():
                    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
                    schema.add_field(field_name="id", datatype=DataType.INT64, is_primary=True)
                    schema.add_field(field_name="vector", datatype=DataType.FLOAT_VECTOR,
                                     dim=DIM)
                    self.client.create_collection(collection_name=self.name, schema=schema)
                    params = MilvusClient.prepare_index_params()
                    # Milvus Lite has no HNSW ("local mode only support FLAT IVF_FLAT
                    # AUTOINDEX"): exact FLAT search in its place
                    params.add_index(field_name="vector", metric_type="L2", index_type="FLAT",
                                     index_name="vector_index")
                    self.client.create_index(collection_name=self.name, index_params=params,
                                             sync=True)
                self.client.load_collection(self.name)

        for module in (indexer_module, retriever_module):
            module.VectorStore = LiteStore
        graph = load_kg(kb)
        self._scratch = tempfile.TemporaryDirectory(prefix="simgrag-reference-")
        configs = {
            "processed_data_dir": self._scratch.name,
            "vector_store_names": {"node": "metaQA_node", "relation": "metaQA_relation"},
            "retriever": {"node_sim_topk": k_nodes, "relation_sim_topk": k_relations,
                          "final_topk": k, "timeout": 600},
        }
        started = time.perf_counter()
        with contextlib.redirect_stdout(sys.stderr):  # their progress; stdout is the report
            indexer_module.Indexer(configs).build_index(graph)
            self.index_seconds = time.perf_counter() - started
            self.retriever = retriever_module.Retriever(configs, graph)
        self.address = (f"SimGRAG authors' Retriever ({code}) over Milvus Lite "
                        f"{milvus / (digest + '.db')}")

    def evaluate(self, embedder: Any, question: Any, *, k: int, **options: Any) -> Outcome:
        result = self.retriever.retrieve([list(t) for t in oracle_triples(question)],
                                         mode="greedy")
        # DFS from the topic (the one named node, the root), so along the chain: the last
        # matched edge ends at the answer.
        answers = [graph[-1][2] for _, graph, _ in result["results"]]
        hits = [answer_matches(a, question.answers) for a in answers]
        return Outcome(question, any(hits), bool(hits and hits[0]), answers,
                       [float(score) for score, _, _ in result["results"]],
                       {"embed": result["embedding_time"] * 1000,
                        "vector": result["vector_search_time"] * 1000,
                        "match": result["graph_search_time"] * 1000},
                       paths={"vector": "milvus-lite FLAT", "match": "reference greedy DFS"})

    def index_state(self) -> dict[str, Any]:
        return {"vector_search": "exact: Milvus Lite FLAT index, L2",
                "index_seconds": round(self.index_seconds, 1)}


def load_kg(kb: Path) -> dict[str, dict[str, list[str]]]:
    """MetaQA's kb.txt as the authors' MetaQA loader builds it (src/dataset.py): node ->
    relation -> neighbours, both directions, without repeats; the relations named as kgdb
    embeds them (:func:`kgdb.schema.model.humanize`: ``directed_by`` -> ``directed by``), so
    both sides index the same texts (the authors' loader keeps ``directed_by``)."""
    graph: dict[str, dict[str, list[str]]] = {}
    with kb.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            parts = line.rstrip("\n").split("|")
            if len(parts) != 3:
                raise KgdbError(f"{kb}:{number}: expected head|relation|tail")
            head, relation, tail = parts[0], humanize(parts[1]), parts[2]
            graph.setdefault(head, {}).setdefault(relation, []).append(tail)
            graph.setdefault(tail, {}).setdefault(relation, []).append(head)
    for adjacency in graph.values():
        for relation in adjacency:
            adjacency[relation] = list(set(adjacency[relation]))
    return graph


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, required=True, help="SimGRAG checkout")
    parser.add_argument("--kb", type=Path, required=True, help="MetaQA kb.txt")
    parser.add_argument("--questions", type=Path, action="append", required=True)
    parser.add_argument("--limit", type=int, default=None, help="first N questions per file")
    parser.add_argument("--engines", default="falkordb,neo4j",
                        help="kgdb's engines before the reference (falkordb, neo4j)")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--milvus", type=Path, default=None,
                        help="folder of the Milvus Lite files (default "
                             "$KGDB_HOME/simgrag-reference), one per knowledge graph")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--kn", type=int, default=16)
    parser.add_argument("--kr", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    embedder = default_embedder()
    stores: dict[str, Any] = {}
    try:
        for name in [n.strip() for n in args.engines.split(",") if n.strip()]:
            if name == "falkordb":
                stores[name] = connect(dataclasses.replace(settings, uri="embedded"),
                                       create=False)
            elif name == "neo4j":
                if settings.embedded:
                    raise KgdbError("--engines neo4j: KGDB_URI is not set to a Neo4j server")
                stores[name] = connect(settings)
            else:
                raise KgdbError(f"--engines: {name!r} is not falkordb or neo4j")
        milvus = args.milvus or settings.home / "simgrag-reference"
        stores["reference"] = ReferenceEngine(args.code, args.kb, milvus, embedder, k=args.k,
                                              k_nodes=args.kn, k_relations=args.kr)
        questions = []
        for path in args.questions:
            questions += read_questions(path)[: args.limit or None]
        report = bench_side_by_side(stores, embedder, questions, k=args.k, warmup=args.warmup,
                                    k_nodes=args.kn, k_relations=args.kr, k_types=16,
                                    distinct="known")
    except KgdbError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        for store in stores.values():
            if hasattr(store, "close"):
                store.close()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for hop, row in report["hops"].items():
            print(hop, {name: {"total p50": row[name]["latency_ms"]["total"]["p50"],
                               **{key: value for key, value in row[name].items()
                                  if key.startswith(("paired", "gsds", "hits"))}}
                        for name in stores})
    return 0


if __name__ == "__main__":
    sys.exit(main())
