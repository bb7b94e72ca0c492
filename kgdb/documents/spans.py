"""LLM-free named things in a text: the phrases of the retrieval graph (kgdb/documents/ppr_graph.py).

No model, only rules (the README's "Graph retrieval" section says the same):

- **Proper-noun spans**: runs of capitalised words, joined across the lower-case connectors
  of names (``of``, ``the``, ``de``, ``von``, ...): ``University of Notre Dame``, ``Hank
  Snow``; leading function words that merely start a sentence (``The``, ``In``, ``He``, ...)
  and trailing connectors are dropped.
- **Quoted spans**: text between double quotes, 3 to 60 characters (titles of songs, films).
- **Years and numbers**: four-digit years (1000-2099) and numbers with a thousands separator
  or a decimal point are phrases too (``1,200``).
- **The gazetteer**: names of the graph's entities found in the text, any case (so the
  knowledge graph's entities are phrases wherever a chunk names them).
- Phrases shorter than 3 characters are left out; each is kept once, case-folded as its id.

Any script's capitals start a name (Unicode's upper- and title-case letters: ``Łódź``,
``Čapek``, ``İstanbul``, ``Αθήνα``, ``Москва``), a name's letters may carry combining marks,
and text is read in its NFC form, so ``Café`` is one phrase whether its ``é`` is one code
point or two (NFD). Python's ``re`` has no Unicode categories: the patterns use the
``regex`` module's ``\\p{Lu}``/``\\p{Lt}``/``\\p{M}``.

Sentences are split after ``.``, ``!`` or ``?`` followed by space and a capital letter, digit
or quote, except after an abbreviation, and no span crosses a sentence end (on MuSiQue-100 and
2wiki-100, 2,192 of 25,872 spans did: ``United States. It``, ``Tennessee. He``). Which full
stops end no sentence was decided from those corpora's texts:

- after a title that precedes a name (``Mr.``, ``St.``, ``Dr.``, ``Mt.``, :data:`TITLES`):
  never (``St. Louis``, ``Mr. Smith``);
- after an initial (``S.``), a dotted acronym (``U.S.``, ``D.C.``) or an abbreviation that
  ends names (``Jr.``, ``Bros.``, :data:`NAME_ENDS`): only where the next word is a
  sentence-initial function word (``the U.S. It was``) and not itself an initial
  (``P. A. Backer``); so ``U.S. Navy``, ``Albert S. Rogell`` and ``Warner Bros. Records``
  stay whole.

The retrieval graph's sentence nodes (its fact seeds) are cut finer, by
:func:`seed_sentences`: at every ``.``, ``!`` or ``?`` before a capital, abbreviations
included, as before this rule: cutting them like :func:`sentences` costs ``ppr`` recall
(docs/solvers/ppr.md).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import regex as re

from kgdb.documents.gazetteer import Gazetteer

_CONNECTOR_WORDS = "of the de la le du del da von van der den and for on in at y"
CONNECTORS = frozenset(_CONNECTOR_WORDS.split())
"""Lower-case words allowed inside a name (between capitalised words)."""
_FUNCTION_WORDS = """
a an the in on at of for and but or if when while after before during this that these those
it its he she they his her their we our you your i as by from to with is was were are be
been being there here where which who what how why also although however since unlike
despite following according other some many most such each both several all any no not one
two three four five six seven eight nine ten first second third after later then thus
"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
"""Capitalised words that start a sentence without naming anything."""
MIN_LENGTH = 3
_CAPITAL = r"\p{Lu}\p{Lt}"
"""Letters that start a name or a sentence (a character class's body): any script's capitals."""
_CAPITALISED = rf"[{_CAPITAL}]\p{{M}}*[\w\p{{M}}'\u2019\-.&]*"
_SPAN = re.compile(rf"{_CAPITALISED}(?:\s+(?:(?:{'|'.join(sorted(CONNECTORS))})\s+)*"
                   rf"{_CAPITALISED})*")
_QUOTED = re.compile(r"\"([^\"\n]{3,60})\"|\u201c([^\u201d\n]{3,60})\u201d")
_NUMBER = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})\b|\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|"
                     r"\b\d+\.\d+\b")
_SENTENCE_END = re.compile(rf"[.!?]\s+(?=[{_CAPITAL}0-9\"\u201c])")
_PIECE_END = re.compile(rf"(?<=[.!?])\s+(?=[{_CAPITAL}0-9\"\u201c])")
TITLES = frozenset(["mr", "mrs", "ms", "dr", "st", "mt", "ft", "hon", "rev", "gen", "col", "lt",
                    "capt", "sgt", "prof", "sen", "rep", "gov", "fr"])
"""Abbreviations that stand before a name: a full stop after them ends no sentence."""
NAME_ENDS = frozenset(["jr", "sr", "bros", "co"])
"""Abbreviations that end a name: a full stop after them ends a sentence only before a
function word (as after an initial or a dotted acronym). ``Ltd.`` and ``Inc.`` are not among
them: in the corpora they ended a sentence before a capitalised word as often as not."""
_TOKEN_BEFORE = re.compile(r"(\S+)$")
_WORD_AFTER = re.compile(r"[\"\u201c]?([^\s\"\u201c\u201d]+)")
_INITIAL_OR_ACRONYM = re.compile(rf"(?:\p{{L}}\p{{M}}*\.)*[{_CAPITAL}]\p{{M}}*")
_INITIAL = re.compile(rf"[{_CAPITAL}]\p{{M}}*\.")


def phrase_id(text: str) -> str:
    """A phrase's id: its words case-folded, single-spaced, in NFC."""
    return unicodedata.normalize("NFC", " ".join(text.casefold().split()))


def proper_noun_spans(text: str) -> list[str]:
    """The proper-noun spans of ``text`` (see the module docstring), in order: none crosses
    the end of a sentence."""
    return [span for sentence in sentences(unicodedata.normalize("NFC", text))
            for span in _spans(sentence)]


def _spans(text: str) -> list[str]:
    out = []
    for match in _SPAN.finditer(text):
        words = match.group().strip(" .'\u2019-").split()
        while words and words[0].casefold().strip(".") in FUNCTION_WORDS:
            words = words[1:]
        while words and words[-1].casefold() in CONNECTORS:
            words = words[:-1]
        span = " ".join(words).rstrip(".")
        if len(span) >= MIN_LENGTH:
            out.append(span)
    return out


def phrases(text: str, gazetteer: Gazetteer | None = None,
            extra: Iterable[str] = ()) -> list[str]:
    """Phrase ids named in ``text``: proper-noun and quoted spans, years and numbers, the
    gazetteer's names, and ``extra`` (a chunk's document title), each once, in order."""
    text = unicodedata.normalize("NFC", text)
    found: list[str] = [*extra, *proper_noun_spans(text)]
    found += [a or b for a, b in _QUOTED.findall(text)]
    found += _NUMBER.findall(text)
    if gazetteer is not None:
        found += [name for _, name, _, _ in gazetteer.find(text)]
    ids = (phrase_id(p) for p in found)
    return list(dict.fromkeys(p for p in ids if len(p) >= MIN_LENGTH))


def seed_sentences(text: str) -> list[str]:
    """``text`` cut at every ``.``, ``!`` or ``?`` followed by space and a capital, digit or
    quote, abbreviations included (the retrieval graph's sentence nodes: the module
    docstring says why), blank pieces left out."""
    return [s.strip() for s in _PIECE_END.split(text) if s.strip()]


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (see the module docstring), blank ones left out."""
    out, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if _ends_sentence(text, match.start(), match.end()):
            out.append(text[start:match.start() + 1])
            start = match.end()
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def _ends_sentence(text: str, stop: int, next_word: int) -> bool:
    """Whether the ``.``, ``!`` or ``?`` at ``stop`` ends a sentence; ``next_word``: where the
    capitalised word after it starts."""
    if text[stop] != ".":
        return True
    before = _TOKEN_BEFORE.search(text, 0, stop)
    token = before.group(1).lstrip("(\"\u201c'") if before else ""
    if token.casefold() in TITLES:
        return False
    if token.casefold() in NAME_ENDS or _INITIAL_OR_ACRONYM.fullmatch(token):
        after = _WORD_AFTER.match(text, next_word)
        word = after.group(1) if after else ""
        if _INITIAL.fullmatch(word):  # another initial: P. A. Backer
            return False
        return word.casefold().rstrip(".,;:") in FUNCTION_WORDS
    return True
