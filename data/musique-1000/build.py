"""Build data/musique-1000 from HippoRAG's MuSiQue release (see README.md here).

    python data/musique-1000/build.py --questions musique.json --corpus musique_corpus.json \
        [--out data/musique-1000]

--questions is HippoRAG's reproduce/dataset/musique.json (1,000 dev questions: {id, question,
answer, answer_aliases, answerable, paragraphs: [{idx, title, paragraph_text, is_supporting}],
question_decomposition}); --corpus its reproduce/dataset/musique_corpus.json (11,656 passages
{title, text}, the questions' paragraphs). Writes questions.jsonl, one question a line as
{id, question, answer, answer_aliases, supporting (the distinct titles of its supporting
paragraphs, in order), context (the titles of its paragraphs, in order)}, which `kgdb eval
retrieval --questions` reads as it is, and corpus.json, every passage as {title, text} in
order. Titles repeat in MuSiQue (one Wikipedia article, several paragraphs); recall is
measured on titles, as kgdb eval does for MuSiQue's own file.

The checks (exit 1 if one fails): every supporting paragraph (title and text) is a passage of
the corpus, and every passage is a paragraph of some question. Prints the counts and the
input files' sha256. Standard library only; no network.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def compact(item: dict) -> dict:
    """One HippoRAG MuSiQue question as the record kgdb's eval reads (extra keys ignored)."""
    paragraphs = item["paragraphs"]
    supporting = list(dict.fromkeys(p["title"] for p in paragraphs if p.get("is_supporting")))
    return {"id": item["id"], "question": item["question"], "answer": item["answer"],
            "answer_aliases": list(item.get("answer_aliases", [])), "supporting": supporting,
            "context": [p["title"] for p in paragraphs]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, required=True,
                        help="HippoRAG's reproduce/dataset/musique.json")
    parser.add_argument("--corpus", type=Path, required=True,
                        help="HippoRAG's reproduce/dataset/musique_corpus.json")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)

    items = json.loads(args.questions.read_text(encoding="utf-8"))
    passages = json.loads(args.corpus.read_text(encoding="utf-8"))
    rows = [compact(item) for item in items]
    corpus = [{"title": p["title"], "text": p["text"]} for p in passages]
    (args.out / "questions.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    (args.out / "corpus.json").write_text(
        json.dumps(corpus, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")

    in_corpus = {(p["title"], p["text"]) for p in corpus}
    paragraphs = {(p["title"], p["paragraph_text"]) for item in items for p in item["paragraphs"]}
    missing = sorted({f"{item['id']}: {p['title']}" for item in items for p in item["paragraphs"]
                      if p.get("is_supporting") and (p["title"], p["paragraph_text"]) not in in_corpus})
    strays = sorted({title for title, text in in_corpus if (title, text) not in paragraphs})
    no_support = [r["id"] for r in rows if not r["supporting"]]
    print(json.dumps({
        "sha256": {"questions": hashlib.sha256(args.questions.read_bytes()).hexdigest(),
                   "corpus": hashlib.sha256(args.corpus.read_bytes()).hexdigest()},
        "questions": len(rows),
        "hops": dict(sorted(collections.Counter(r["id"].split("__")[0] for r in rows).items())),
        "passages": len(corpus),
        "distinct_titles": len({p["title"] for p in corpus}),
        "supporting_documents": sum(len(r["supporting"]) for r in rows),
        "supporting_paragraphs_missing": missing,
        "passages_of_no_question": strays,
        "questions_without_support": no_support,
    }, ensure_ascii=False, indent=1))
    return 1 if missing or strays or no_support else 0


if __name__ == "__main__":
    sys.exit(main())
