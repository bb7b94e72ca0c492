"""The retriever a user would pick instead of kgdb: BM25 + dense score fusion over the same
chunks, scored like ``kgdb eval retrieval``.

* chunks: kgdb's own reader and chunker (``kgdb load documents`` makes the same ones);
* dense: all-MiniLM-L6-v2 through kgdb's embedder (its cache), over the text kgdb embeds
  (title and heading path, then the text), exact cosine to every chunk;
* BM25: ``bm25s`` (Lucene's BM25 variant, k1 1.5, b 0.75: its defaults) over title + text,
  English stop words and Snowball stemming (``PyStemmer``);
* fusion: each score min-max normalised over every chunk for the question, then
  ``(1 - w) dense + w bm25`` (w 0.5), and reciprocal rank fusion (k 60) for comparison;
* documents ranked at their best chunk; recall@k of the supporting documents (a title names
  the document whose id or title it is), the mean over the questions.

Needs ``pip install bm25s PyStemmer`` (not kgdb dependencies). Prints JSON; ``--out`` also
writes it with the commit, versions and load average::

    python benchmarks/bm25_dense_fusion.py --corpus ../shared/data/musique-100/corpus.json \\
        --questions ../shared/data/musique-100/questions.json \\
        --out benchmarks/results/2026-12-01-bm25-dense-musique-100.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def _recall(rankings: list[list[str]], golds: list[list[set[str]]], ks: list[int]
            ) -> dict[str, float]:
    out = {}
    for k in ks:
        values = [sum(1 for ids in gold if ids & set(ranking[:k])) / len(gold)
                  for ranking, gold in zip(rankings, golds, strict=True)]
        out[f"recall@{k}"] = round(float(np.mean(values)), 4)
    return out


def _documents(order: np.ndarray, chunk_documents: list[str], depth: int) -> list[str]:
    ranking: list[str] = []
    for i in order:
        d = chunk_documents[int(i)]
        if d not in ranking:
            ranking.append(d)
            if len(ranking) == depth:
                break
    return ranking


def _min_max(x: np.ndarray) -> np.ndarray:
    low, high = float(x.min()), float(x.max())
    return (x - low) / (high - low) if high > low else np.ones_like(x)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--k", default="2,5,10")
    parser.add_argument("--weight", type=float, default=0.5, help="BM25's weight in fusion")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    import bm25s
    import Stemmer

    from kgdb.documents.chunking import chunk_document
    from kgdb.documents.pipeline import chunk_title, embedding_text
    from kgdb.documents.readers import read_documents
    from kgdb.embed.models import default_embedder
    from kgdb.retrieve.documents import read_questions

    ks = [int(k) for k in args.k.split(",")]
    depth = max(ks)
    documents = read_documents([args.corpus])
    chunks = [(d, c) for d in documents for c in chunk_document(d)]
    chunk_documents = [c.document_id for _, c in chunks]
    titles: dict[str, set[str]] = {}
    for d in documents:
        titles.setdefault(d.id, set()).add(d.id)
        titles.setdefault(d.title, set()).add(d.id)
    questions = read_questions(args.questions)
    golds = [[titles.get(s) or {s} for s in dict.fromkeys(q.supporting)] for q in questions]

    embedder = default_embedder()
    start = time.perf_counter()
    vectors = np.asarray(embedder.embed([embedding_text(d, c) for d, c in chunks]),
                         dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    asked = np.asarray(embedder.embed([q.question for q in questions]), dtype=np.float64)
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)
    embed_s = time.perf_counter() - start

    stemmer = Stemmer.Stemmer("english")
    start = time.perf_counter()
    corpus_tokens = bm25s.tokenize([f"{chunk_title(d, c)}\n{c.text}" for d, c in chunks],
                                   stopwords="en", stemmer=stemmer, show_progress=False)
    bm25 = bm25s.BM25()
    bm25.index(corpus_tokens, show_progress=False)
    index_s = time.perf_counter() - start

    systems: dict[str, list[list[str]]] = {"dense": [], "bm25": [], "fusion": [], "rrf": []}
    search_ms: list[float] = []
    for i, q in enumerate(questions):
        dense = vectors @ asked[i]
        start = time.perf_counter()
        tokens = bm25s.tokenize([q.question], stopwords="en", stemmer=stemmer,
                                show_progress=False, return_ids=False)[0]
        lexical = np.asarray(bm25.get_scores(tokens), dtype=np.float64)
        search_ms.append((time.perf_counter() - start) * 1000)
        fused = (1 - args.weight) * _min_max(dense) + args.weight * _min_max(lexical)
        by_dense, by_bm25 = np.argsort(-dense, kind="stable"), np.argsort(-lexical, kind="stable")
        rank = np.empty(len(chunks))
        rrf = np.zeros(len(chunks))
        for order in (by_dense, by_bm25):
            rank[order] = np.arange(1, len(chunks) + 1)
            rrf += 1.0 / (60 + rank)
        systems["dense"].append(_documents(by_dense, chunk_documents, depth))
        systems["bm25"].append(_documents(by_bm25, chunk_documents, depth))
        systems["fusion"].append(_documents(np.argsort(-fused, kind="stable"), chunk_documents,
                                            depth))
        systems["rrf"].append(_documents(np.argsort(-rrf, kind="stable"), chunk_documents,
                                         depth))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent, check=False).stdout.strip()
    from importlib.metadata import version

    result: dict[str, Any] = {
        "benchmark": "bm25_dense_fusion", "corpus": str(args.corpus),
        "questions_file": str(args.questions), "questions": len(questions),
        "documents": len(documents), "chunks": len(chunks), "k": ks,
        "fusion_weight_bm25": args.weight,
        "recall": {name: _recall(r, golds, ks) for name, r in systems.items()},
        "seconds": {"embed": round(embed_s, 2), "bm25_index": round(index_s, 3)},
        "bm25_search_ms_p50": round(float(np.percentile(search_ms, 50)), 3),
        "commit": commit, "engine": "none (numpy + bm25s in process)",
        "versions": {"python": platform.python_version(), "bm25s": version("bm25s"),
                     "PyStemmer": version("PyStemmer"), "numpy": np.__version__,
                     "embedder": getattr(embedder, "model_id", "all-MiniLM-L6-v2")},
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
