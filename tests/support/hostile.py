"""The hostile corpus and the adversarial suite's figures.

The expected outcome of every case is written here from the README's text contract, not by
calling kgdb's own checks, so a drift between the contract and the code shows as a failure.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

KEY_LIMIT = 4096
"""KGDB_MAX_KEY_BYTES default (README, "Text")."""

CORPUS: dict[str, str] = {
    "plain": "Kismet",
    "single quote": "O'Brien",
    "double quote": 'say "hi"',
    "backslash": "a\\b",
    "backslash quote": '\\"',
    "unicode escape text": "\\u0041",
    "backticks": "`x` ``y``",
    "cypher fragment": "x'}) MATCH (n) DETACH DELETE n //",
    "cypher comment": "/* c */ RETURN 1 --",
    "param look-alike": "$id",
    "param braces": "${x} {id}",
    "keyword MATCH": "MATCH",
    "keyword null": "null",
    "keyword true": "true",
    "NaN text": "NaN",
    "CYPHER prefix": "CYPHER x=1 RETURN 1",
    "redis command": "GRAPH.DELETE kgdb",
    "homoglyph": "Кismet",  # Cyrillic К
    "ligature": "ﬁlm",
    "rtl override": "abc\u202edef",
    "zero width": "Kis\u200bmet",
    "bom inside": "a\ufeffb",
    "emoji": "🎬 film 👩🏽‍🎤",
    "cjk": "七人の侍",
    "combining": "e\u0301",
    "nbsp": "a\u00a0b",
    "line separator": "a\u2028b",
    "tab inside": "a\tb",
    "newline inside": "a\nb",
    "crlf inside": "a\r\nb",
    "cr inside": "a\rb",
    "NUL": "a\x00b",
    "0x01": "a\x01b",
    "0x1f": "a\x1fb",
    "DEL": "a\x7fb",
    "C1 0x85": "a\x85b",
    "escape 0x1b": "\x1b[31mred",
    "lone surrogate": "a\ud800b",
    "empty": "",
    "spaces only": "   ",
    "leading space": "  padded  ",
    "4096 bytes": "k" * KEY_LIMIT,
    "4096 bytes multibyte": "é" * (KEY_LIMIT // 2),
    "4097 bytes": "k" * (KEY_LIMIT + 1),
    "4098 bytes multibyte": "é" * (KEY_LIMIT // 2 + 1),
    "100 KB": "x" * 100_000,
    "pipe": "a|b",
    "comma": "a,b",
    "hash": "C# Programming",
    "slash colon": "Type/Name: x",
    "json-ish": '{"subject": 1}',
    "percent": "%s %d %n",
}

_FORBIDDEN = {chr(c) for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20),
                               *range(0x7F, 0xA0)]}


def contract_problem(value: str, *, key: bool = True) -> bool:
    """True when the README's contract refuses ``value`` (after line-ending normalisation)."""
    value = normalised(value)
    if any(ch in _FORBIDDEN or 0xD800 <= ord(ch) <= 0xDFFF for ch in value):
        return True
    return key and len(value.encode("utf-8", "surrogatepass")) > KEY_LIMIT


def normalised(value: str) -> str:
    return value.replace("\r\n", "\n").replace("\r", "\n")


def field_expectation(value: str) -> str | None:
    """What a delimited/JSON loader field stores: None when the line is rejected."""
    stored = normalised(value.strip(" \t"))
    if not stored or contract_problem(stored):
        return None
    return stored


@dataclass
class Figures:
    """Counts of one surface: cases tried, stored verbatim, rejected cleanly, failures."""

    tried: int = 0
    verbatim: int = 0
    rejected: int = 0
    failures: int = 0


class Tally:
    """The suite's figures, per surface; printed at the end of the run (see the live tests)."""

    def __init__(self) -> None:
        self.surfaces: dict[str, Figures] = {}
        self.notes: Counter[str] = Counter()

    def add(self, surface: str, *, verbatim: int = 0, rejected: int = 0, failures: int = 0) -> None:
        fig = self.surfaces.setdefault(surface, Figures())
        fig.tried += verbatim + rejected + failures
        fig.verbatim += verbatim
        fig.rejected += rejected
        fig.failures += failures

    def total(self) -> Figures:
        out = Figures()
        for fig in self.surfaces.values():
            out.tried += fig.tried
            out.verbatim += fig.verbatim
            out.rejected += fig.rejected
            out.failures += fig.failures
        return out

    def lines(self) -> list[str]:
        """One line per surface: tried, correct (stored verbatim or rejected cleanly, as the
        contract says), of which verbatim and rejected, and failures."""
        def line(name: str, f: Figures) -> str:
            return (f"  {name:<48} tried {f.tried:>5}  correct {f.verbatim + f.rejected:>5} "
                    f"(verbatim {f.verbatim:>5}, rejected {f.rejected:>5})  failures "
                    f"{f.failures}")
        rows = [line(name, f) for name, f in sorted(self.surfaces.items())]
        rows.append(line("TOTAL", self.total()))
        return rows

    def to_json(self) -> str:
        return json.dumps({k: vars(v) for k, v in self.surfaces.items()})


TALLY = Tally()


MARKUP: dict[str, str] = {
    "script tag": "<script>window.__kgdb_pwned = 1</script>",
    "img onerror": '"><img src=x onerror="window.__kgdb_pwned = 2">',
    "javascript url": "javascript:window.__kgdb_pwned = 3",
    "svg onload": "<svg onload=window.__kgdb_pwned=4>",
    "rtl override": "abc\u202edef.exe",
    "mermaid breakout": 'x"] --> y[["z|w',
    "xml entity": "&lt;&amp; ]]> <!-- -->",
}
"""Names and texts that would run or break a page, a drawing or an export if they reached it
as markup: shown as text, never executed (``window.__kgdb_pwned`` stays unset)."""
