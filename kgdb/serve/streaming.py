"""Server-sent events of a streamed answer, bounded in time and memory, cancelled with their
client, closed with a last event when the server stops.

An answer's events come from a generator that blocks on the LLM (:func:`kgdb.retrieve.ask.
ask_stream`, :class:`kgdb.llm.client.ChatClient`). :class:`EventStream` runs it in a thread
of its own (``kgdb-stream``) and sends what it yields, while the event loop

- listens for the client going away (``http.disconnect``): the thread is told to stop, closes
  the generator at its next piece, and that closes the LLM's HTTP response (no request,
  thread or file descriptor left);
- holds the request's deadline (``--timeout``, :data:`kgdb.serve.embedding.DEADLINE`) and
  the server's drain (:class:`Drain`): past either, it sends a last ``error`` event itself
  (504, or 503 when the server is stopping) and stops the thread the same way;
- takes at most :data:`QUEUE_DEPTH` events ahead of a slow client (the thread waits), so
  nothing piles up in memory.

Why not Starlette's ``StreamingResponse``: it iterates a sync generator in the shared thread
pool one ``next()`` at a time and, when the client goes away, cancels its task without
telling the generator, which then stays blocked on the LLM until that answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from starlette.responses import Response

QUEUE_DEPTH = 16
"""Events the thread may be ahead of the client."""
DRAIN_MARGIN_S = 1.0
"""A stream still running this long before the drain's end gets its last event (the server
cancels what is left at the end)."""
_END = object()


def event(kind: str, data: Any) -> bytes:
    """One server-sent event. Its data is JSON on one line; U+2028, U+2029 and U+0085, which
    JSON may carry raw but line splitters such as Python's ``str.splitlines`` (httpx's
    ``iter_lines``) read as line ends, are written as escapes, so no text inside the data
    can start a field of its own (a forged ``event:`` or ``data:`` line)."""
    text = json.dumps(data, ensure_ascii=False)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029") \
        .replace("\u0085", "\\u0085")
    return f"event: {kind}\ndata: {text}\n\n".encode()


class Drain:
    """The server's stop: :meth:`begin` (on SIGTERM) gives in-flight requests ``grace``
    seconds; streams check :meth:`left`."""

    def __init__(self) -> None:
        self.ends_at: float | None = None
        self.on_begin: list[Callable[[float], None]] = []

    @property
    def draining(self) -> bool:
        return self.ends_at is not None

    def begin(self, grace: float) -> None:
        if self.ends_at is None:
            self.ends_at = time.monotonic() + grace
            for hook in self.on_begin:
                hook(grace)

    def left(self) -> float | None:
        """Seconds a stream may still run before it is closed (None: not draining)."""
        if self.ends_at is None:
            return None
        return self.ends_at - DRAIN_MARGIN_S - time.monotonic()


class EventStream(Response):
    """``text/event-stream`` of ``events`` (bytes, one or more whole events each), see the
    module docstring. ``final(status, message)`` makes the last event when the stream is cut
    (deadline, drain); ``ended(outcome)`` is told how it ended: ``"end"``, ``"disconnect"``,
    ``"timeout"`` or ``"drain"``."""

    media_type = "text/event-stream"

    def __init__(self, events: Iterator[bytes], *, deadline: float | None, drain: Drain,
                 final: Callable[[int, str], bytes], ended: Callable[[str], None],
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(content=None, status_code=200, headers=headers,
                         media_type=self.media_type)
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self.events = events
        self.deadline = deadline
        self.drain = drain
        self.final = final
        self.ended = ended

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        credit = threading.Semaphore(QUEUE_DEPTH)
        stop = threading.Event()
        events = self.events

        def put(item: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody listens
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def pump() -> None:
            try:
                while not stop.is_set():
                    while not credit.acquire(timeout=0.25):
                        if stop.is_set():
                            return
                    if stop.is_set():
                        return
                    try:
                        item = next(events)
                    except StopIteration:
                        return
                    put(item)
            except Exception as exc:  # _events reports its own failures; this is a bug
                put(exc)
            finally:
                with contextlib.suppress(Exception):
                    close = getattr(events, "close", None)
                    if close is not None:
                        close()  # in this thread: closes the LLM's response
                put(_END)

        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers})
        thread = threading.Thread(target=contextvars.copy_context().run, args=(pump,),
                                  name="kgdb-stream", daemon=True)
        thread.start()
        gone = asyncio.Event()

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone.set()
                    stop.set()
                    queue.put_nowait(_END)
                    return

        watcher = asyncio.ensure_future(watch())
        outcome = "end"
        try:
            while True:
                to_deadline = None if self.deadline is None else \
                    self.deadline - time.monotonic()
                to_drain = self.drain.left()
                if to_deadline is not None and to_deadline <= 0:
                    outcome, last = "timeout", self.final(
                        504, "the request ran longer than the server's timeout")
                elif to_drain is not None and to_drain <= 0:
                    outcome, last = "drain", self.final(503, "the server is shutting down")
                else:
                    last = b""
                if last:
                    stop.set()
                    await send({"type": "http.response.body", "body": last, "more_body": True})
                    break
                wait = min(x for x in (0.5, to_deadline, to_drain) if x is not None)
                try:
                    item = await asyncio.wait_for(queue.get(), timeout=max(wait, 0.001))
                except TimeoutError:
                    continue
                if gone.is_set():
                    outcome = "disconnect"
                    break
                if item is _END:
                    break
                if isinstance(item, BaseException):
                    raise item
                credit.release()
                await send({"type": "http.response.body", "body": item, "more_body": True})
        finally:
            stop.set()
            watcher.cancel()
            if gone.is_set():
                outcome = "disconnect"
            self.ended(outcome)
        if not gone.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})
