"""Answer quality with an LLM (``kgdb eval qa``): each question asked through :func:`ask`
with a solver, exactly as ``kgdb ask`` would, and the LLM's answer scored against the gold
answers, with the LLM requests and tokens each question cost.

The scores are those of the datasets' official evaluation scripts:

* **EM and F1** as HotpotQA's ``hotpot_evaluate_v1.py`` computes them (2WikiMultiHopQA's and
  MuSiQue's scripts reuse it): both texts normalised as SQuAD does (lower case; punctuation,
  the articles a/an/the and extra white space removed); EM is equality; F1 is the harmonic
  mean of token precision and recall, 0 when either side is yes/no/noanswer and the two
  differ. A question's score is the best over its gold answer and aliases (MuSiQue's
  ``answer_aliases``).
* **Hits@1** for MetaQA (SimGRAG's and KAG's measure): the answer, or the first item it
  names (up to a line break, ``|`` or ``;``), equals one of the gold answers after the same
  normalisation.

These few lines are written here rather than taken from a package: the official scripts are
not published as libraries, and their normalisation is what the papers' tables use.

Only the harness is tested here (against a scripted OpenAI-compatible server): these machines
have no LLM, so the model's quality is for a user with an endpoint to measure.
"""

from __future__ import annotations

import collections
import json
import re
import statistics
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgdb.embed import Embedder
from kgdb.engine import GraphStore
from kgdb.errors import KgdbError, LlmError, LoadError
from kgdb.llm import ChatClient, LlmUsage
from kgdb.retrieve.documents import Mode


@dataclass(frozen=True)
class QaQuestion:
    question: str
    answers: tuple[str, ...]
    """The gold answer first, then its aliases (each scored; the best counts)."""
    id: str = ""


# ---------------------------------------------------------------------- the official measures
def normalize_answer(text: str) -> str:
    """SQuAD's normalisation (HotpotQA's ``normalize_answer``): lower case, no punctuation, no
    articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


_PUNCTUATION = frozenset(string.punctuation)
_SPECIAL = ("yes", "no", "noanswer")


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    """HotpotQA's ``f1_score`` (its F1; precision and recall are not reported here)."""
    predicted, wanted = normalize_answer(prediction), normalize_answer(gold)
    if (predicted in _SPECIAL or wanted in _SPECIAL) and predicted != wanted:
        return 0.0
    p_tokens, g_tokens = predicted.split(), wanted.split()
    common = collections.Counter(p_tokens) & collections.Counter(g_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p_tokens), same / len(g_tokens)
    return 2 * precision * recall / (precision + recall)


def hits_at_1(prediction: str, answers: Sequence[str]) -> float:
    """Whether the answer, or the first item it names, is one of ``answers``."""
    gold = {normalize_answer(a) for a in answers}
    first = re.split(r"[\n|;]", prediction.strip(), maxsplit=1)[0]
    return float(normalize_answer(prediction) in gold or normalize_answer(first) in gold)


# ---------------------------------------------------------------------- the questions
def read_questions(path: Path) -> tuple[list[QaQuestion], str]:
    """The questions of ``path`` and their kind (``metaqa`` or ``open``): JSONL ``{question,
    answer | answers: [...], answer_aliases?: [...], id?}`` (the repo's 2wiki and MuSiQue
    question files as they are), MuSiQue's own ``questions.json`` (a list), or MetaQA's
    ``question<TAB>answer|answer...[<TAB>type]`` lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LoadError(f"{path}: cannot read the questions: {exc}") from exc
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LoadError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from exc
        if not isinstance(items, list):
            raise LoadError(f"{path}: a question file is a JSON list or JSON lines")
        return [_question(f"{path}: item {i}", item, str(i)) for i, item in
                enumerate(items, 1)], "open"
    if stripped.startswith("{"):
        out = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LoadError(f"{path}:{number}: not JSON ({exc.msg})") from exc
            out.append(_question(f"{path}:{number}", item, str(number)))
        return out, "open"
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (2, 3) or not fields[0].strip():
            raise LoadError(f"{path}:{number}: a MetaQA line is question<TAB>answers"
                            f"[<TAB>type], found {len(fields)} field(s)")
        answers = tuple(a.strip() for a in fields[1].split("|") if a.strip())
        if not answers:
            raise LoadError(f"{path}:{number}: the question has no answer")
        # MetaQA marks the topic entity [like this]; the brackets are not the question's
        question = fields[0].replace("[", "").replace("]", "").strip()
        out.append(QaQuestion(question, answers, str(number)))
    return out, "metaqa"


def _question(where: str, item: Any, number: str) -> QaQuestion:
    if not isinstance(item, dict) or not isinstance(item.get("question"), str) \
            or not item["question"].strip():
        raise LoadError(f"{where}: a question is {{question, answer or answers}}")
    answers = item.get("answers")
    if answers is None:
        answers = [item.get("answer"), *(item.get("answer_aliases") or [])]
    if not isinstance(answers, list) or not answers or not all(
            isinstance(a, str | int | float) and not isinstance(a, bool) for a in answers):
        raise LoadError(f"{where}: the answer must be a text, or answers a list of texts")
    return QaQuestion(item["question"].strip(), tuple(str(a) for a in answers),
                      str(item.get("id", number)))


# ---------------------------------------------------------------------- the evaluation
@dataclass
class ModeScores:
    em: list[float] = field(default_factory=list)
    f1: list[float] = field(default_factory=list)
    hits1: list[float] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)
    tokens_in: list[int] = field(default_factory=list)
    tokens_out: list[int] = field(default_factory=list)
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self, kind: str) -> dict[str, Any]:
        def mean(values: Sequence[float]) -> float:
            return round(statistics.fmean(values), 4) if values else 0.0

        scores = {"hits@1": mean(self.hits1)} if kind == "metaqa" else {}
        return {**scores, "em": mean(self.em), "f1": mean(self.f1),
                "llm_per_question": {"requests": mean(self.requests),
                                     "tokens_in": mean(self.tokens_in),
                                     "tokens_out": mean(self.tokens_out)},
                "failed": self.failed, "errors": self.errors[:5]}


@dataclass
class QaEval:
    questions: int
    kind: str
    modes: dict[str, ModeScores]

    def to_json(self, *, answers: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": self.questions, "kind": self.kind,
                               "scores": {m: s.to_json(self.kind) for m, s in self.modes.items()}}
        if answers:
            out["answers"] = {m: s.answers for m, s in self.modes.items()}
        return out


def evaluate(store: GraphStore, embedder: Embedder, llm: ChatClient,
             questions: Sequence[QaQuestion], modes: Sequence[Mode], *, kind: str = "open",
             progress: bool = False) -> QaEval:
    """Every question asked with every mode. A question whose ask fails (the LLM's output
    unusable after its retries, a solver's error) scores 0 and is counted as failed with its
    error (its LLM requests are not counted: the failure ends them). An endpoint that cannot
    be reached or refuses the key stops the evaluation (the error names the question), as
    does a solver that is not ready (its index missing)."""
    from kgdb.progress import progress_bar
    from kgdb.retrieve.ask import ask
    from kgdb.retrieve.readiness import NotReadyError

    result = QaEval(len(questions), kind, {m.label: ModeScores() for m in modes})
    for number, q in enumerate(progress_bar(questions, desc="questions", unit="q",
                                            disable=not progress, leave=False)):
        for mode in modes:
            scores = result.modes[mode.label]
            text, usage = "", LlmUsage()
            try:
                answer = ask(store, embedder, llm, q.question, mode.options)
                text, usage = answer.text or "", answer.evidence.usage
            except NotReadyError:
                raise  # every question would fail alike: the error names the command
            except KgdbError as exc:
                if isinstance(exc, LlmError) and _unreachable(exc):
                    raise LlmError(f"question {q.id or number + 1}: {exc}", exc.public) from exc
                scores.failed += 1
                scores.errors.append(f"{q.id or number + 1}: {exc}"[:300])
            scores.requests.append(usage.requests)
            scores.tokens_in.append(usage.tokens_in)
            scores.tokens_out.append(usage.tokens_out)
            scores.em.append(max(exact_match(text, a) for a in q.answers))
            scores.f1.append(max(f1_score(text, a) for a in q.answers))
            if kind == "metaqa":
                scores.hits1.append(hits_at_1(text, q.answers))
            scores.answers.append({"id": q.id, "question": q.question, "answer": text,
                                   "gold": list(q.answers)})
    return result


def _unreachable(exc: LlmError) -> bool:
    """An LLM endpoint that answers nothing (not one bad reply): no point asking again."""
    return exc.public.endswith(
        ("(unreachable)", "(HTTP 401)", "(HTTP 403)", "(HTTP 404)"))
