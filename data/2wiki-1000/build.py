"""Rebuild data/2wiki-1000 from HippoRAG's 2WikiMultiHopQA release (see README.md here).

    python data/2wiki-1000/build.py --corpus 2wikimultihopqa_corpus.json \
        [--questions 2wikimultihopqa.json] [--out data/2wiki-1000]

corpus.json is HippoRAG's whole corpus file (reproduce/dataset/2wikimultihopqa_corpus.json,
6,119 passages), every passage kept in order as {title, text}. With --questions (HippoRAG's
reproduce/dataset/2wikimultihopqa.json, 1,000 dev questions) it also writes questions.jsonl,
every question as data/2wiki-100 writes its records ({id, type, question, answer,
supporting, context}). Without it, the questions checked are those of questions.jsonl here if
it exists, else data/2wiki-100/questions.jsonl (the first 100 of the same 1,000).

The checks (exit 1 if one fails): no two passages share a title; every supporting and context
title is a passage; every question's supporting titles are among its context titles; and the
questions' context titles, first seen first, are the corpus's first passages in the corpus's
order (HippoRAG built the corpus that way, so a question file that is not HippoRAG's, or a
corpus that is not, fails here). Prints the counts and the sha256 of the input files.
Standard library only; no network.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIRST_100 = HERE.parent / "2wiki-100" / "questions.jsonl"


def compact(item: dict) -> dict:
    """One HippoRAG question as the record kgdb's eval reads (extra keys are ignored there)."""
    supporting = list(dict.fromkeys(str(title) for title, _ in item["supporting_facts"]))
    return {"id": item["_id"], "type": item["type"], "question": item["question"],
            "answer": item["answer"], "supporting": supporting,
            "context": [str(title) for title, _ in item["context"]]}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True,
                        help="HippoRAG's reproduce/dataset/2wikimultihopqa_corpus.json")
    parser.add_argument("--questions", type=Path,
                        help="HippoRAG's reproduce/dataset/2wikimultihopqa.json")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)

    passages = json.loads(args.corpus.read_text(encoding="utf-8"))
    corpus = [{"title": p["title"], "text": p["text"]} for p in passages]
    (args.out / "corpus.json").write_text(
        json.dumps(corpus, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    inputs = {"corpus": _sha256(args.corpus)}

    questions_path = args.out / "questions.jsonl"
    if args.questions is not None:
        rows = [compact(item) for item in json.loads(args.questions.read_text(encoding="utf-8"))]
        questions_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                          for r in rows), encoding="utf-8")
        inputs["questions"] = _sha256(args.questions)
        source = str(questions_path)
    else:
        source_path = questions_path if questions_path.exists() else FIRST_100
        rows, source = _read_rows(source_path), str(source_path)

    titles = collections.Counter(p["title"] for p in corpus)
    missing = sorted({t for row in rows for t in row["supporting"] + row["context"]
                      if t not in titles})
    not_in_context = [row["id"] for row in rows if not set(row["supporting"]) <= set(row["context"])]
    first_seen = list(dict.fromkeys(t for row in rows for t in row["context"]))
    in_corpus_order = first_seen == [p["title"] for p in corpus[:len(first_seen)]]
    several = sum(1 for n in titles.values() if n > 1)
    print(json.dumps({
        "sha256": inputs,
        "questions_checked": source,
        "questions": len(rows),
        "types": dict(collections.Counter(row["type"] for row in rows).most_common()),
        "passages": len(corpus),
        "titles_with_several_passages": several,
        "context_passages_of_these_questions": len(first_seen),
        "contexts_are_the_corpus_prefix": in_corpus_order,
        "supporting_documents": sum(len(row["supporting"]) for row in rows),
        "missing_titles": missing,
        "supporting_outside_context": not_in_context,
    }, ensure_ascii=False, indent=1))
    return 1 if missing or not_in_context or several or not in_corpus_order else 0


if __name__ == "__main__":
    sys.exit(main())
