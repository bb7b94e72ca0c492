"""SimGRAG's two LLM steps: query-to-pattern (paper 4.1, Tables 10-11) and verbalised
subgraph-augmented generation (paper 4.4, Tables 12-13), over the OpenAI-compatible API.

Few-shot examples are data, one JSON file per dataset (``kgdb/data/simgrag_<name>.json``, or any
file given with ``--examples``): ``pattern_examples`` (query, divided, triples),
``answer_examples`` and ``verify_examples`` (query, evidences, answer).

Model replies are parsed tolerantly -- code fences, prose around the object, single quotes,
Python tuples, trailing commas, ``true``/``None`` -- with :func:`ast.literal_eval` after
extraction and a JSON fallback (never ``eval``); a reply that still cannot be used is shown
back to the model with the reason, a bounded number of times.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

from kgdb.dsl.pattern import parse_unknown, pattern_from_triples
from kgdb.errors import ConfigError, KgdbError
from kgdb.ir import Pattern, PatternError
from kgdb.llm import ChatClient, OutputParseError
from kgdb.llm.replies import fenced_bodies, strip_reasoning
from kgdb.text import text_problem

Dataset = Literal["metaqa", "factkg"]
DATASETS: tuple[str, ...] = get_args(Dataset)
MAX_TRIPLES = 12
MAX_TEXT = 300


@dataclass(frozen=True)
class Examples:
    """Few-shot examples for one dataset."""

    name: str
    pattern: list[dict[str, Any]]
    answer: list[dict[str, Any]]
    verify: list[dict[str, Any]]


def load_examples(name_or_path: str = "metaqa") -> Examples:
    """The examples shipped for ``metaqa``/``factkg``, or those of a JSON file."""
    if name_or_path in DATASETS:
        text = resources.files("kgdb").joinpath("data", f"simgrag_{name_or_path}.json"
                                                ).read_text(encoding="utf-8")
        where = f"the built-in {name_or_path} examples"
    else:
        path = Path(name_or_path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the examples file: "
                              f"{exc.strerror or exc}") from exc
        where = str(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: "
                          f"{exc.msg}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("pattern_examples"), list):
        raise ConfigError(f"{where}: expected an object with a 'pattern_examples' list")
    for i, ex in enumerate(data["pattern_examples"], start=1):
        if not isinstance(ex, dict) or "query" not in ex or not isinstance(ex.get("triples"),
                                                                            list):
            raise ConfigError(f"{where}: pattern example {i} needs 'query' and 'triples'")
    return Examples(str(data.get("dataset", name_or_path)), data["pattern_examples"],
                    list(data.get("answer_examples") or []),
                    list(data.get("verify_examples") or []))


# ---------------------------------------------------------------------- prompts
PATTERN_INSTRUCTIONS = "\n".join([
    'You need to segment the given query then extract the potential knowledge graph structures.',
    '',
    'Notes)',
    ('1). Use the original description in the query with enough context, NEVER use unspecific '
     "words like 'in', 'appear in', 'for', 'of' etc."),
    ("2). For nodes or relations that are unknown, you can use the keyword 'UNKNOWN' with a "
     "unique ID, e.g., 'UNKNOWN artist 1', 'UNKNOWN relation 1'."),
    ('3). Return the segmented query and extracted graph structures strictly following the '
     'format:'),
    '{',
    '    "divided": [',
    '        "segment 1",',
    '        ...',
    '    ],',
    '    "triples": [',
    '        ("head", "relation", "tail"),',
    '        ...',
    '    ]',
    '}',
    ("4). NEVER provide extra descriptions or explanations, such as something like 'Here is the "
     "extracted knowledge graph structure'."),
])

ANSWER_INSTRUCTIONS = "\n".join([
    'Please answer the question based on the given evidences from a knowledge graph.',
    '',
    'Notes)',
    ('1). Use the original text in the valid evidences as answer output, NEVER rephrase or '
     'reformat them.'),
    ('2). There may be different answers for different evidences. Return all possible answer '
     'for every evidence graph, except for those that are obviously not aligned with the query.'),
    '3). You should provide a brief reason with several words, then tell that the answer.',
])

VERIFY_INSTRUCTIONS = "\n".join([
    'Please verify the statement based on the given evidences from a knowledge graph.',
    '',
    'Notes)',
    ('1). If there is any evidence that completely supports the statement, the answer is '
     "'True', otherwise is 'False'."),
    ("2). For questions like 'A has a wife', if there is any evidence that A has a spouse with "
     "any name, the answer is 'True'."),
    ('3). You should provide a brief reason with several words, then tell that the answer is '
     "'True' or 'False'."),
])

TASK = "Your task)\nPlease read and follow the above instructions and examples step by step"


def _tuple(items: Any) -> str:
    return "(" + ", ".join(json.dumps(str(x), ensure_ascii=False) for x in items) + ")"


def format_pattern_output(divided: list[str], triples: list[Any]) -> str:
    lines = ["{", '    "divided": [']
    lines += [f"        {json.dumps(d, ensure_ascii=False)}," for d in divided]
    lines += ["    ],", '    "triples": [']
    lines += [f"        {_tuple(t)}," for t in triples]
    lines += ["    ]", "}"]
    return "\n".join(lines)


def pattern_prompt(question: str, examples: Examples) -> str:
    parts = [PATTERN_INSTRUCTIONS, "", "Examples)"]
    for i, ex in enumerate(examples.pattern, start=1):
        parts.append(f"{i}. query: {json.dumps(ex['query'], ensure_ascii=False)}")
        parts.append("   output: " + format_pattern_output(list(ex.get("divided") or []),
                                                         ex["triples"]))
    parts += ["", TASK, f"query: {json.dumps(question, ensure_ascii=False)}"]
    return "\n".join(parts)


def format_evidences(graphs: list[list[tuple[str, str, str]]]) -> str:
    """The paper's verbalised subgraphs: ``{"graph [1]": [(h, r, t), ...], ...}``."""
    if not graphs:
        return "{}"
    blocks = []
    for i, triples in enumerate(graphs, start=1):
        inner = ",\n".join(f"        {_tuple(t)}" for t in triples)
        blocks.append(f'    "graph [{i}]": [\n{inner}\n    ]')
    return "{\n" + ",\n".join(blocks) + "\n}"


VerbalGraph = Sequence[tuple[str, str, str]]
"""A subgraph's facts with names, as the paper verbalises evidence (section 4.4)."""


def answer_prompt(question: str, subgraphs: Sequence[VerbalGraph], examples: Examples, *,
                  verify: bool = False) -> str:
    shots = examples.verify if verify else examples.answer
    parts = [VERIFY_INSTRUCTIONS if verify else ANSWER_INSTRUCTIONS, "", "Examples)"]
    for i, ex in enumerate(shots, start=1):
        graphs = [list(map(tuple, v)) for v in (ex.get("evidences") or {}).values()]
        parts.append(f"{i}. query: {json.dumps(ex['query'], ensure_ascii=False)}")
        parts.append("   evidences: " + format_evidences(graphs))
        parts.append(f"   answer: {ex['answer']}")
    parts += ["", TASK, f"query: {json.dumps(question, ensure_ascii=False)}",
              "evidences: " + format_evidences([list(g) for g in subgraphs])]
    return "\n".join(parts)


# ---------------------------------------------------------------------- parsing
_TRIPLES_KEY = re.compile(r"""["']?triples["']?\s*:""", re.I)


def _balanced(text: str, start: int) -> str | None:
    """The bracketed text starting at ``text[start]`` (``{`` or ``[``), quotes respected."""
    pairs = {"{": "}", "[": "]", "(": ")"}
    stack: list[str] = []
    quote: str | None = None
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'":
            # an apostrophe inside a word (Schindler's) is not a quote
            if ch == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < len(text) and \
                    text[i + 1].isalnum():
                i += 1
                continue
            quote = ch
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return text[start:i + 1]
        i += 1
    return None


def _literal(text: str) -> Any:
    """JSON first, then a Python literal (tuples, single quotes, trailing commas)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    normalised = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False",
                                                    re.sub(r"\bnull\b", "None", text)))
    for candidate in (text, normalised):
        try:
            return ast.literal_eval(candidate)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    raise OutputParseError("the output is neither JSON nor a Python literal")


def parse_pattern_reply(text: str) -> tuple[list[str], list[tuple[str, str, str]]]:
    """``(divided, triples)`` from a model's reply; :class:`OutputParseError` says what is wrong."""
    if len(text) > 20000:
        raise OutputParseError("the reply is too long; return only the object")
    bodies = [*fenced_bodies(text), strip_reasoning(text)]
    errors: list[str] = []
    for body in bodies:
        start = body.find("{")
        obj_text = _balanced(body, start) if start >= 0 else None
        if obj_text is not None:
            try:
                value = _literal(obj_text)
            except OutputParseError as exc:
                errors.append(str(exc))
                value = None
            if isinstance(value, dict):
                keys = {str(k).strip().lower(): v for k, v in value.items()}
                if "triples" not in keys:
                    raise OutputParseError('the object has no "triples" list')
                divided = keys.get("divided") or []
                return ([str(d) for d in divided] if isinstance(divided, list) else [],
                        _check_triples(keys["triples"]))
        # A broken object (mismatched quotes around a key, say): look for the list itself.
        m = _TRIPLES_KEY.search(body)
        if m:
            bracket = body.find("[", m.end())
            list_text = _balanced(body, bracket) if bracket >= 0 else None
            if list_text is not None:
                return [], _check_triples(_literal(list_text))
    if errors:
        raise OutputParseError(f"cannot read the object: {errors[0]}")
    raise OutputParseError('no {"divided": [...], "triples": [...]} object found in the reply')


def _check_triples(value: Any) -> list[tuple[str, str, str]]:
    if not isinstance(value, (list, tuple)):
        raise OutputParseError('"triples" must be a list of ("head", "relation", "tail")')
    if not value:
        raise OutputParseError('"triples" is empty; give at least one triple')
    if len(value) > MAX_TRIPLES:
        raise OutputParseError(f'"triples" has {len(value)} items; use at most {MAX_TRIPLES}')
    out = []
    for i, item in enumerate(value, start=1):
        if not isinstance(item, (list, tuple)) or len(item) != 3:
            size = len(item) if isinstance(item, (list, tuple)) else 1
            raise OutputParseError(f"triple {i} has {size} item(s); each triple is "
                                   '("head", "relation", "tail")')
        parts = [" ".join(str(x).split()) for x in item]
        if any(not p for p in parts):
            raise OutputParseError(f"triple {i} has an empty text")
        if any(len(p) > MAX_TEXT for p in parts):
            raise OutputParseError(f"triple {i} has a text longer than {MAX_TEXT} characters")
        problem = next((p for p in map(text_problem, parts) if p), None)
        if problem:  # an escape such as \ud800 in the JSON decodes to text no engine takes
            raise OutputParseError(f"triple {i} has a text that {problem}")
        if parse_unknown(parts[0]) is None and parse_unknown(parts[2]) is None and \
                parts[0] == parts[2]:
            raise OutputParseError(f"triple {i} links {parts[0]!r} to itself")
        out.append((parts[0], parts[1], parts[2]))
    return out


def parse_pattern(text: str) -> Pattern:
    """A reply as a validated :class:`Pattern`."""
    _, triples = parse_pattern_reply(text)
    try:
        return pattern_from_triples(triples)
    except PatternError as exc:
        raise OutputParseError(str(exc)) from exc


_VERDICT = re.compile(r"\b(true|false|supported|refuted)\b", re.I)


def parse_verdict(text: str) -> bool:
    """The last True/False (or Supported/Refuted) the model said."""
    found = _VERDICT.findall(strip_reasoning(text))
    if not found:
        raise OutputParseError("the answer must end by saying that the answer is 'True' or "
                               "'False'")
    return found[-1].lower() in ("true", "supported")


# ---------------------------------------------------------------------- the two LLM steps
def query_to_pattern(client: ChatClient, question: str, examples: Examples, *,
                     attempts: int = 3) -> Pattern:
    """Ask the model for the question's pattern graph (bounded, self-correcting retries)."""
    if not question.strip():
        raise KgdbError("the question is empty")
    messages = [{"role": "user", "content": pattern_prompt(question, examples)}]
    return client.complete_parsed(messages, parse_pattern, attempts=attempts,
                                  what="pattern graph")


@dataclass(frozen=True)
class GeneratedAnswer:
    text: str
    verdict: bool | None = None


def answer_messages(question: str, subgraphs: Sequence[VerbalGraph], examples: Examples, *,
                    verify: bool = False) -> list[dict[str, str]]:
    """The chat messages of the generation step (:func:`generate_answer`)."""
    return [{"role": "user", "content": answer_prompt(question, subgraphs, examples,
                                                      verify=verify)}]


def generate_answer(client: ChatClient, question: str, subgraphs: Sequence[VerbalGraph],
                    examples: Examples, *, verify: bool = False, attempts: int = 3) -> GeneratedAnswer:
    """The paper's verbalised-subgraph generation; with ``verify`` a True/False verdict."""
    messages = answer_messages(question, subgraphs, examples, verify=verify)
    if not verify:
        return GeneratedAnswer(client.complete(messages).strip())

    def parse(text: str) -> GeneratedAnswer:
        return GeneratedAnswer(text.strip(), parse_verdict(text))

    return client.complete_parsed(messages, parse, attempts=attempts, what="verdict")
