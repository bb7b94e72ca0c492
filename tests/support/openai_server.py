"""A scripted OpenAI-compatible HTTP server for tests: replays realistic and malformed replies.

Each scripted step is one of::

    "text"                              # a 200 chat completion with this content
    {"content": "...", "delay": 2.0}    # answer after a delay (slow endpoint)
    {"status": 429}                     # an HTTP error status (429, 500...)
    {"raw": "any bytes"}                # a 200 whose body is exactly this (odd reply shapes)
    callable(request_json) -> step      # decide from the request

A request with ``"stream": true`` gets the content as server-sent chunks, one per word (and
``{"content": ..., "chunk_delay": 0.1}`` waits between them), then a usage chunk when
``stream_options.include_usage`` asks for it, then ``data: [DONE]``. A step may set
``prompt_tokens`` / ``completion_tokens`` (default 1 each; streamed: one per chunk).

Steps are consumed in order; when the script runs out, ``default`` (if set) answers.
Every request body is recorded in ``requests``. Embedding requests get deterministic vectors.
``streaming`` is how many streamed replies are being sent now, ``aborted`` how many ended
because the client closed the connection before the end.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = str | dict[str, Any] | Callable[[dict[str, Any]], Any]


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a killed process, a timed-out request) is no error of the
        server; anything else is printed as usual."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ScriptedOpenAI:
    def __init__(self, script: list[Step] | None = None, default: Step | None = None,
                 embedding_dim: int = 8) -> None:
        self.script: list[Step] = list(script or [])
        self.default = default
        self.embedding_dim = embedding_dim
        self.requests: list[dict[str, Any]] = []
        self.streaming = 0
        self.aborted = 0
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def push(self, *steps: Step) -> None:
        with self._lock:
            self.script.extend(steps)

    def _next(self, body: dict[str, Any]) -> Any:
        with self._lock:
            self.requests.append(body)
            step = self.script.pop(0) if self.script else self.default
        if step is None:
            return {"status": 500, "content": "script exhausted"}
        if callable(step):
            step = step(body)
        return step

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.endswith("/embeddings"):
                    self._send(200, outer._embeddings(body))
                    return
                step = outer._next(body)
                if isinstance(step, str):
                    step = {"content": step}
                if step.get("delay"):
                    time.sleep(float(step["delay"]))
                if "raw" in step:
                    data = step["raw"] if isinstance(step["raw"], bytes) else \
                        str(step["raw"]).encode("utf-8", "surrogatepass")
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                status = int(step.get("status", 200))
                if status != 200:
                    self._send(status, {"error": {"message": step.get("content", "error"),
                                                  "type": "scripted", "code": status}})
                    return
                if body.get("stream"):
                    with outer._lock:
                        outer.streaming += 1
                    try:
                        self._stream(body, step)
                    except ConnectionError:
                        with outer._lock:
                            outer.aborted += 1
                        raise
                    finally:
                        with outer._lock:
                            outer.streaming -= 1
                    return
                prompt = int(step.get("prompt_tokens", 1))
                completion = int(step.get("completion_tokens", 1))
                self._send(200, {
                    "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": step["content"]}}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion},
                })

            def _stream(self, body: dict[str, Any], step: dict[str, Any]) -> None:
                pieces = re.findall(r"\s*\S+\s*", str(step["content"])) or [""]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                head = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
                        "created": 0, "model": body.get("model", "scripted")}
                for i, piece in enumerate(pieces):
                    if i and step.get("chunk_delay"):
                        time.sleep(float(step["chunk_delay"]))
                    delta = {"role": "assistant", "content": piece} if i == 0 else \
                        {"content": piece}
                    self._event({**head, "choices": [{"index": 0, "delta": delta,
                                                      "finish_reason": None}]})
                self._event({**head, "choices": [{"index": 0, "delta": {},
                                                  "finish_reason": "stop"}]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    prompt = int(step.get("prompt_tokens", 1))
                    completion = int(step.get("completion_tokens", len(pieces)))
                    self._event({**head, "choices": [], "usage": {
                        "prompt_tokens": prompt, "completion_tokens": completion,
                        "total_tokens": prompt + completion}})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _event(self, payload: dict[str, Any]) -> None:
                self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
                self.wfile.flush()

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input") or []
        if isinstance(inputs, str):
            inputs = [inputs]
        data = []
        for i, text in enumerate(inputs):
            digest = hashlib.sha256(str(text).encode()).digest()
            vec = [(b - 128) / 128.0 for b in digest[: self.embedding_dim]]
            data.append({"object": "embedding", "index": i, "embedding": vec})
        return {"object": "list", "data": data, "model": body.get("model"),
                "usage": {"prompt_tokens": 1, "total_tokens": 1}}
