"""Progress of long work on stderr: tqdm's bar on a terminal, whole lines elsewhere.

tqdm redraws its bar with carriage returns; written to a pipe or a file (``kgdb load ... 2>
load.log``, CI logs) the redraws pile up on one line. :func:`progress_bar` takes tqdm's
arguments and gives tqdm on a terminal, else a :class:`LineProgress`: one line every
:data:`LINE_INTERVAL_S` seconds and one at the end, each with the count, the rate and the
ETA, formatted by tqdm's own ``format_meter``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

LINE_INTERVAL_S = 10.0
"""Seconds between two progress lines when stderr is not a terminal."""

LINE_FORMAT = "{desc}: {n_fmt}/{total_fmt} ({percentage:.0f}%), {rate_fmt}, ETA {remaining}{postfix}"
LINE_FORMAT_UNKNOWN_TOTAL = "{desc}: {n_fmt}, {rate_fmt}{postfix}"


class LineProgress:
    """The part of tqdm's interface kgdb uses (``update``, ``set_postfix``, ``close``,
    iteration, ``with``), printing whole lines."""

    def __init__(self, iterable: Iterable[Any] | None = None, *, total: float | None = None,
                 desc: str = "", unit: str = "it", unit_scale: bool = False,
                 file: IO[str] | None = None, disable: bool = False,
                 interval_s: float = LINE_INTERVAL_S, **_: Any) -> None:
        self.iterable = iterable
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total = total
        self.desc = desc or "progress"
        self.unit = unit
        self.unit_scale = unit_scale
        self.file = file or sys.stderr
        self.disable = disable
        self.interval_s = interval_s
        self.n = 0
        self.postfix = ""
        self.started = self.last = time.monotonic()
        self.closed = False

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable or ():
            yield item
            self.update(1)
        self.close()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        self.n += int(n)
        now = time.monotonic()
        if now - self.last >= self.interval_s:
            self.last = now
            self._line(now)

    def set_postfix(self, ordered_dict: Mapping[str, Any] | None = None, refresh: bool = True,
                    **kwargs: Any) -> None:
        items = {**(ordered_dict or {}), **kwargs}
        self.postfix = ", ".join(f"{k}={v}" for k, v in items.items())

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.n:
                self._line(time.monotonic())

    def line(self, now: float | None = None) -> str:
        """The line that would be printed now."""
        from tqdm import tqdm

        elapsed = (time.monotonic() if now is None else now) - self.started
        known = bool(self.total)
        text = tqdm.format_meter(
            self.n, self.total if known else None, elapsed, prefix=self.desc, unit=self.unit,
            unit_scale=self.unit_scale, postfix=self.postfix or None,
            bar_format=LINE_FORMAT if known else LINE_FORMAT_UNKNOWN_TOTAL)
        return " ".join(text.split())  # format_meter pads its fields for a redrawn bar

    def _line(self, now: float) -> None:
        if self.disable:
            return
        self.file.write(self.line(now) + "\n")
        self.file.flush()


def progress_bar(iterable: Iterable[Any] | None = None, **kwargs: Any) -> Any:
    """tqdm (same arguments) when its ``file`` (default stderr) is a terminal, else a
    :class:`LineProgress`."""
    stream = kwargs.get("file") or sys.stderr
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        from tqdm import tqdm

        return tqdm(iterable, **{"file": stream, **kwargs})
    return LineProgress(iterable, **kwargs)
