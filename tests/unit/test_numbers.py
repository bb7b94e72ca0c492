"""The one number reader (kgdb/dsl/numbers.py) shared by the rule and logical-form parsers,
logical-form math and the record loader."""

from __future__ import annotations

import pytest

from kgdb.dsl.numbers import NumberError, parse_float, parse_number


@pytest.mark.parametrize(("text", "value"), [
    ("12", 12), (" -7 ", -7), ("+3", 3), ("1.5", 1.5), ("1.", 1.0), (".5", 0.5), ("2e3", 2000.0),
    ("-1E-2", -0.01), ("123456789012345678901234567890", 123456789012345678901234567890)])
def test_numbers(text: str, value: float) -> None:
    number = parse_number(text)
    assert number == value and type(number) is type(value)


@pytest.mark.parametrize(("text", "infinite"), [
    ("abc", False), ("", False), ("1,000", False), ("1_000", False), ("0x10", False), ("1 2", False),
    ("1e999", True), ("inf", True), ("-Infinity", True), ("nan", True)])
def test_not_numbers(text: str, infinite: bool) -> None:
    with pytest.raises(NumberError) as info:
        parse_number(text)
    assert info.value.infinite is infinite
    assert str(info.value) == f"{text!r} is not a {'finite ' if infinite else ''}number"


def test_parse_float_rejects_integers_beyond_float() -> None:
    assert parse_float("3") == 3.0 and isinstance(parse_float("3"), float)
    with pytest.raises(NumberError, match="not a finite number"):
        parse_float("9" * 400)
