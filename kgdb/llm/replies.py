"""What every LLM step does to a reply before parsing it: reasoning blocks (``<think>``...)
removed, the body of a code fence taken, surrounding whitespace stripped. One function, so a
reasoning model or a fenced reply works with every prompt (patterns, plans, filters,
extraction)."""

from __future__ import annotations

import re

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.S | re.I)
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n?(.*?)(?:```|\Z)", re.S)


def strip_reasoning(text: str) -> str:
    """``text`` without ``<think>``/``<thinking>``/``<reasoning>`` blocks (an unclosed block
    runs to the end: the model was cut off while thinking)."""
    return _THINK.sub("", text).strip()


def clean_reply(text: str) -> str:
    """The part of a model's reply to parse: reasoning removed, then the first code fence's
    body if there is one (an unclosed fence runs to the end), else the whole text."""
    text = strip_reasoning(text)
    fenced = _FENCE.search(text)
    return (fenced.group(1) if fenced else text).strip()


def fenced_bodies(text: str) -> list[str]:
    """Every code fence's body in ``text`` after reasoning is removed (for parsers that look
    for the fence holding what they want)."""
    return [m.group(1) for m in _FENCE.finditer(strip_reasoning(text))]
