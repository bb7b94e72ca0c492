"""Rebuild data/2wiki-100 from HippoRAG's 2WikiMultiHopQA release (see README.md here).

    python data/2wiki-100/build.py --corpus 2wikimultihopqa_corpus.json \
        [--questions 2wikimultihopqa.json] [--count 100] [--out data/2wiki-100]

With --questions (HippoRAG's reproduce/dataset/2wikimultihopqa.json: a list of {_id, type,
question, context: [[title, [sentences]]...], supporting_facts: [[title, sentence]...],
answer, ...}) it writes questions.jsonl: the first --count questions as {id, type, question,
answer, supporting (the distinct titles of supporting_facts, in order), context (the context
titles, in order)}. Without it, questions.jsonl is read as it is. Either way corpus.json is
written from the corpus file: every passage whose title is a context title of those
questions, in corpus order, as {title, text}. Then it checks that every supporting and context
title is a passage and prints the counts. Standard library only; no network.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def compact(item: dict) -> dict:
    """One HippoRAG question as the record kgdb's eval reads (extra keys are ignored there)."""
    supporting = list(dict.fromkeys(str(title) for title, _ in item["supporting_facts"]))
    return {"id": item["_id"], "type": item["type"], "question": item["question"],
            "answer": item["answer"], "supporting": supporting,
            "context": [str(title) for title, _ in item["context"]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True,
                        help="HippoRAG's reproduce/dataset/2wikimultihopqa_corpus.json")
    parser.add_argument("--questions", type=Path,
                        help="HippoRAG's reproduce/dataset/2wikimultihopqa.json")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)

    questions_path = args.out / "questions.jsonl"
    if args.questions is not None:
        items = json.loads(args.questions.read_text(encoding="utf-8"))[:args.count]
        rows = [compact(item) for item in items]
        questions_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                          for r in rows), encoding="utf-8")
    else:
        rows = [json.loads(line) for line in
                questions_path.read_text(encoding="utf-8").splitlines() if line.strip()]

    passages = json.loads(args.corpus.read_text(encoding="utf-8"))
    wanted = {title for row in rows for title in row["context"]}
    corpus = [{"title": p["title"], "text": p["text"]} for p in passages if p["title"] in wanted]
    (args.out / "corpus.json").write_text(
        json.dumps(corpus, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")

    titles = collections.Counter(p["title"] for p in corpus)
    missing = sorted({t for row in rows for t in row["supporting"] + row["context"]
                      if t not in titles})
    not_in_context = [row["id"] for row in rows if not set(row["supporting"]) <= set(row["context"])]
    print(json.dumps({
        "questions": len(rows),
        "types": dict(collections.Counter(row["type"] for row in rows).most_common()),
        "passages": len(corpus),
        "titles_with_several_passages": sum(1 for n in titles.values() if n > 1),
        "supporting_documents": sum(len(row["supporting"]) for row in rows),
        "missing_titles": missing,
        "supporting_outside_context": not_in_context,
    }, ensure_ascii=False, indent=1))
    return 1 if missing or not_in_context else 0


if __name__ == "__main__":
    sys.exit(main())
