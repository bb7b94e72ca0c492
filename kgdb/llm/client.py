"""A chat client over the OpenAI-compatible API with bounded, self-correcting retries.

Settings: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``KGDB_LLM_MODEL`` (default ``gpt-4o-mini``),
``KGDB_LLM_TIMEOUT`` seconds. HTTP 429 and 5xx are retried with backoff by the ``openai``
package (``max_retries``); output that cannot be parsed is sent back to the model with the
parse error, at most ``attempts`` times, then a :class:`~kgdb.errors.LlmError` ends it.
A reply of any shape (no choices, non-text content, odd usage counts, deep nesting, not
JSON) is an :class:`~kgdb.errors.LlmError`, never another exception; its ``public`` message
says what failed without the endpoint, its credentials or the upstream body.
"""

from __future__ import annotations

import contextlib
import copy
import re
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kgdb.errors import ConfigError, LlmError

T = TypeVar("T")


class OutputParseError(ValueError):
    """Raised by a reply parser; its message is shown to the model on the retry."""


@dataclass(frozen=True)
class LlmSettings:
    base_url: str | None
    api_key: str | None
    model: str
    timeout_s: float = 60.0
    http_retries: int = 3

    @classmethod
    def from_env(cls, model: str | None = None) -> LlmSettings:
        from kgdb.config import environment

        env = environment()
        return cls(base_url=env.OPENAI_BASE_URL, api_key=env.OPENAI_API_KEY,
                   model=model or env.KGDB_LLM_MODEL, timeout_s=env.KGDB_LLM_TIMEOUT,
                   http_retries=env.KGDB_LLM_RETRIES)


def openai_client(settings: LlmSettings | None = None) -> Any:
    settings = settings or LlmSettings.from_env()
    if not settings.api_key and not settings.base_url:
        raise ConfigError("no LLM endpoint configured: set OPENAI_API_KEY (and OPENAI_BASE_URL "
                          "for a non-OpenAI server such as vLLM or Ollama)")
    import openai

    return openai.OpenAI(base_url=settings.base_url, api_key=settings.api_key or "unused",
                         timeout=settings.timeout_s, max_retries=settings.http_retries)


@dataclass(frozen=True)
class ChatReply:
    """One answered chat request: its text and what it cost."""

    text: str
    prompt_tokens: int = 0
    """``usage.prompt_tokens`` of the response (0 when the server reports no usage)."""
    completion_tokens: int = 0
    http_retries: int = 0
    """How often the ``openai`` package sent the request again (429, 5xx, timeouts) before
    this answer; its backoff honours ``Retry-After``."""


@dataclass
class LlmUsage:
    """What the LLM requests of one piece of work cost (an answer, a retrieval): requests
    sent, tokens in (prompt) and out (completion) as the server's ``usage`` reported them,
    and the HTTP retries the ``openai`` package made."""

    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    http_retries: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def sent(self) -> None:
        with self._lock:
            self.requests += 1

    def add(self, reply: ChatReply) -> None:
        with self._lock:
            self.tokens_in += reply.prompt_tokens
            self.tokens_out += reply.completion_tokens
            self.http_retries += reply.http_retries

    def to_json(self) -> dict[str, int]:
        return {"requests": self.requests, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "http_retries": self.http_retries}

    def describe(self) -> str:
        return (f"{self.requests} request{'s' if self.requests != 1 else ''}, "
                f"{self.tokens_in} tokens in, {self.tokens_out} out")


class ChatClient:
    """Sends chat messages and returns the reply text, or a parsed value. One client may be
    shared by threads (the ``openai`` client is); :meth:`metered` gives a view of it that
    counts one piece of work's requests and tokens (:class:`LlmUsage`)."""

    def __init__(self, settings: LlmSettings | None = None) -> None:
        self.settings = settings or LlmSettings.from_env()
        self._client = openai_client(self.settings)
        self.calls = 0
        self._calls_lock = threading.Lock()
        self.usage: LlmUsage | None = None
        """Where this view counts (None: not metered)."""
        self.remaining: Callable[[], float | None] | None = None
        """The time left to the piece of work this view serves (None: unbounded); it raises
        once none is left (:meth:`bounded`)."""

    def metered(self) -> ChatClient:
        """This client (the same connection pool) counting into a new :attr:`usage`."""
        view = copy.copy(self)
        view.usage = LlmUsage()
        return view

    def bounded(self, remaining: Callable[[], float | None]) -> ChatClient:
        """This client with a deadline: every request's timeout is cut to ``remaining()``
        seconds, and a streamed reply calls it between pieces, so a reply trickling in
        piece by piece still ends on time (``remaining`` raises once it is past; a service
        passes its request deadline). Views made from it (:meth:`metered`) keep it."""
        view = copy.copy(self)
        view.remaining = remaining
        return view

    def _timeout(self) -> dict[str, float]:
        """The ``timeout`` option of the next request: the settings', cut to the time left."""
        left = self.remaining() if self.remaining is not None else None
        return {} if left is None else {"timeout": max(0.001, min(self.settings.timeout_s,
                                                                   left))}

    @property
    def endpoint(self) -> str:
        return self.settings.base_url or "https://api.openai.com/v1"

    def complete(self, messages: list[dict[str, str]], *, temperature: float = 0.0,
                 max_tokens: int | None = None) -> str:
        return self.chat(messages, temperature=temperature, max_tokens=max_tokens).text

    def chat(self, messages: list[dict[str, str]], *, temperature: float = 0.0,
             max_tokens: int | None = None) -> ChatReply:
        """Like :meth:`complete`, with the token usage and the HTTP retries of the request."""
        self._count_request()
        with self._errors():
            raw = self._client.chat.completions.with_raw_response.create(
                model=self.settings.model, messages=messages, temperature=temperature,
                **({"max_tokens": max_tokens} if max_tokens else {}), **self._timeout(),
            )
            reply = raw.parse()
        content = _content(reply)
        if content is None or not content.strip():
            raise LlmError(f"the LLM at {self.endpoint} returned an empty reply",
                           "the LLM endpoint failed (an empty reply)")
        usage = getattr(reply, "usage", None)
        answered = ChatReply(text=_contract_text(content),
                             prompt_tokens=_count(getattr(usage, "prompt_tokens", 0)),
                             completion_tokens=_count(getattr(usage, "completion_tokens", 0)),
                             http_retries=_count(getattr(raw, "retries_taken", 0)))
        if self.usage is not None:
            self.usage.add(answered)
        return answered

    def stream(self, messages: list[dict[str, str]], *, temperature: float = 0.0,
               max_tokens: int | None = None) -> Generator[str, None, None]:
        """The reply's text in pieces as the server sends them (``stream: true``); the usage
        the server reports in its last chunk (``stream_options.include_usage``) is counted
        in :attr:`usage`. An empty reply is an :class:`~kgdb.errors.LlmError`.

        The HTTP response is closed however the iteration ends: read to its end, failed,
        past :attr:`remaining`, or abandoned by the caller (``close()`` on this generator,
        as a service does for a client that went away), so no request to the LLM is left
        running."""
        self._count_request()
        prompt = completion = 0
        seen = False
        with self._errors():
            chunks = self._client.chat.completions.create(
                model=self.settings.model, messages=messages, temperature=temperature,
                stream=True, stream_options={"include_usage": True},
                **({"max_tokens": max_tokens} if max_tokens else {}), **self._timeout())
            try:
                for chunk in chunks:
                    if self.remaining is not None:
                        self.remaining()
                    usage = getattr(chunk, "usage", None)
                    if usage is not None:
                        prompt = _count(getattr(usage, "prompt_tokens", 0))
                        completion = _count(getattr(usage, "completion_tokens", 0))
                    piece = _delta(chunk)
                    if piece:
                        text = _contract_text(piece)
                        seen = seen or bool(text.strip())
                        yield text
            finally:
                with contextlib.suppress(Exception):
                    chunks.close()
        if self.usage is not None:
            self.usage.add(ChatReply("", prompt, completion))
        if not seen:
            raise LlmError(f"the LLM at {self.endpoint} returned an empty reply",
                           "the LLM endpoint failed (an empty reply)")

    def _count_request(self) -> None:
        with self._calls_lock:
            self.calls += 1
        if self.usage is not None:
            self.usage.sent()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """The ``openai`` package's failures, and replies of any shape, as LlmErrors."""
        import openai

        try:
            yield
        except openai.APITimeoutError as exc:
            raise LlmError(f"the LLM at {self.endpoint} did not answer within "
                           f"{self.settings.timeout_s:g} s",
                           "the LLM endpoint failed (no answer in time)") from exc
        except openai.RateLimitError as exc:
            raise LlmError(f"the LLM at {self.endpoint} kept answering 429 (rate limited) "
                           f"after {self.settings.http_retries} retries",
                           "the LLM endpoint failed (HTTP 429)") from exc
        except openai.APIConnectionError as exc:
            raise LlmError(f"cannot reach the LLM at {self.endpoint}: {exc}",
                           "the LLM endpoint failed (unreachable)") from exc
        except openai.APIStatusError as exc:
            raise LlmError(f"the LLM at {self.endpoint} answered HTTP {exc.status_code}: "
                           f"{_short(exc.message)}",
                           f"the LLM endpoint failed (HTTP {exc.status_code})") from exc
        except openai.OpenAIError as exc:
            raise LlmError(f"the LLM at {self.endpoint} failed: {_short(str(exc))}") from exc
        except (ValueError, TypeError, AttributeError, KeyError, IndexError,
                RecursionError) as exc:  # a 200 whose body is no chat completion
            raise LlmError(f"the LLM at {self.endpoint} sent a reply that is no chat "
                           f"completion: {_short(repr(exc))}",
                           "the LLM endpoint failed (a malformed reply)") from exc

    def complete_parsed(self, messages: list[dict[str, str]], parse: Callable[[str], T], *,
                        attempts: int = 3, what: str = "reply",
                        on_reply: Callable[[ChatReply], None] | None = None) -> T:
        """Ask, parse; on :class:`OutputParseError` show the model its error and ask again.

        ``on_reply`` sees every answered request (usage, HTTP retries), also those whose text
        could not be parsed, before the text is parsed."""
        history = list(messages)
        last_error = ""
        for _ in range(max(1, attempts)):
            reply = self.chat(history)
            if on_reply is not None:
                on_reply(reply)
            text = reply.text
            try:
                return parse(text)
            except (OutputParseError, ValueError, TypeError, AttributeError, KeyError,
                    IndexError, RecursionError) as exc:  # any shape of reply: told, retried
                last_error = str(exc) if isinstance(exc, OutputParseError) else (
                    f"the reply has an unexpected shape ({type(exc).__name__})")
                history += [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": (
                        f"Your {what} could not be used: {last_error}\n"
                        "Answer again, in exactly the required format, with nothing else.")},
                ]
        raise LlmError(f"the model's {what} could not be parsed after {attempts} attempts: "
                       f"{last_error}", f"the LLM's {what} could not be used")


def _delta(chunk: Any) -> str | None:
    """A streamed chunk's text, whatever its shape (None when it has none)."""
    try:
        content = chunk.choices[0].delta.content
    except (AttributeError, IndexError, TypeError, KeyError):
        return None
    return content if isinstance(content, str) else None


def _content(reply: Any) -> str | None:
    """The first choice's text, whatever the reply's shape (None when there is none)."""
    try:
        content = reply.choices[0].message.content
    except (AttributeError, IndexError, TypeError, KeyError):
        return None
    return content if isinstance(content, str) else None


_UNUSABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _contract_text(text: str) -> str:
    """A reply within the text contract whatever the model sent: lone surrogates become
    U+FFFD, other control characters than TAB, LF and CR are dropped (so nothing a model
    writes reaches the graph, the embedder or a response as text no UTF-8 can carry)."""
    return _UNUSABLE.sub("", _SURROGATE.sub("\ufffd", text))


def _count(value: Any) -> int:
    """A usage count as a non-negative int; 0 for anything else (a string, a float NaN,
    a negative or absurd number, a nested object)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if value != value or not 0 <= value < 2**53:
        return 0
    return int(value)


def _short(text: str) -> str:
    return " ".join(str(text).split())[:200]
