"""The one reader of numbers written as text: rule and logical-form literals, values a
logical form computes with, and the record loader's columns."""

from __future__ import annotations

import math
import re

NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
"""A decimal number: sign, digits, optional fraction and exponent (no ``inf``, ``nan`` or ``_``)."""

_INTEGER = re.compile(r"[+-]?\d+")


class NumberError(ValueError):
    """Text that is not a finite decimal number; the message says which and why."""

    def __init__(self, text: str, *, infinite: bool) -> None:
        super().__init__(f"{text!r} is not a {'finite ' if infinite else ''}number")
        self.infinite = infinite
        """True for a number out of range (``1e999``, ``inf``, ``nan``), False for not a number."""


def parse_number(text: str) -> int | float:
    """``"12"`` -> 12 (exact), ``"1.5"``/``"2e3"`` -> float; surrounding space is ignored.
    Raises :class:`NumberError` for anything else, including numbers too large to be finite."""
    cleaned = text.strip()
    if not NUMBER.fullmatch(cleaned):
        try:
            infinite = not math.isfinite(float(cleaned))  # inf, nan: numbers, not finite
        except ValueError:
            infinite = False
        raise NumberError(text, infinite=infinite)
    if _INTEGER.fullmatch(cleaned):
        return int(cleaned)
    value = float(cleaned)
    if not math.isfinite(value):
        raise NumberError(text, infinite=True)
    return value


def parse_float(text: str) -> float:
    """:func:`parse_number` as a float (an integer too large for a float is not finite)."""
    number = parse_number(text)
    try:
        return float(number)
    except OverflowError as exc:
        raise NumberError(text, infinite=True) from exc
