"""kgdb's tools for agent hosts over MCP (stdio): ``kgdb serve --mcp``. The same operations
as the HTTP API (:class:`~kgdb.serve.operations.Operations`) on one graph, chosen at start;
read-only tools unless started with ``--allow-writes`` (then ``apply_rules`` is added). The
host starts the process as its user, so stdio needs no token. Needs the ``mcp`` package."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from pydantic import ValidationError

from kgdb.retrieve.registry import AnyOptions, parse_options
from kgdb.serve.embedding import deadline, remaining
from kgdb.serve.errors import ServiceError, new_request_id, report, scrub
from kgdb.serve.operations import Operations, ServeConfig, cap_lists, text_contract
from kgdb.serve.tenants import Tenants

F = TypeVar("F", bound=Callable[..., Any])


def _guard(timeout_s: float | None) -> Callable[[F], F]:
    """A decorator: :func:`_expected_errors` with the request's deadline."""
    return functools.partial(_expected_errors, timeout_s=timeout_s)


def _expected_errors(tool: F, timeout_s: float | None = None) -> F:
    """Every failure as the tool's one-line error, through the service's one mapping
    (:mod:`kgdb.serve.errors`): what failed, never how, with the request id under which the
    server's log (stderr) has the details. Arguments keep the text contract first."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(tool)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        rid = new_request_id()
        try:
            problem = text_contract(kwargs, "arguments")
            if problem:
                raise ServiceError(422, problem)
            with deadline(timeout_s):
                return tool(*args, **kwargs)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise ToolError(f"options.{where}: {scrub(str(error['msg']))}") from exc
        except Exception as exc:
            _, message = report(exc, rid, f"mcp {tool.__name__}")
            raise ToolError(f"{message} (request {rid})") from exc
    return wrapper  # type: ignore[return-value]


def build_server(config: ServeConfig, graph: str | None = None, *, embedder: Any = None,
                 llm: Any = None) -> Any:
    """The MCP server: tools over ``graph`` (default: the configured graph or database)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    ops = Operations(config, embedder=embedder, llm=llm)
    tenants = Tenants(config.settings, 1, on_close=ops.forget)
    name = graph or tenants.default
    guarded = _guard(config.timeout_s)
    server = MCPServer("kgdb", instructions=(
        f"Knowledge-graph retrieval over the graph {name!r} (kgdb). Use retrieve for "
        "evidence, ask for an answer with evidence, run_logical_form for KAG logical forms, "
        "evaluate_rules to judge facts with a loaded rule set."))
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @contextlib.contextmanager
    def reader(write: bool = False) -> Iterator[Any]:
        with tenants.lease(name) as store:
            yield store.view(read_only=not write, timeout_s=config.timeout_s,
                             metadata={"app": "kgdb", "endpoint": "mcp"}, remaining=remaining)

    def capped(payload: dict[str, Any]) -> dict[str, Any]:
        if cap_lists(payload, config.max_rows):
            payload["truncated"] = True
        return payload

    @server.tool(annotations=read_only)
    @guarded
    def health() -> dict[str, Any]:
        """The engine, its version, the graph's indexes and the installed procedures."""
        with reader() as store:
            return ops.health(store, name)

    @server.tool(annotations=read_only)
    @guarded
    def retrieve(question: str, options: AnyOptions | None = None) -> dict[str, Any]:
        """Evidence for a question without an answer. options: a solver and its options,
        e.g. {"solver": "document-graph"} or {"solver": "pattern", "pattern": [["Kismet",
        "directed_by", "UNKNOWN 1"]]}."""
        with reader() as store:
            evidence = ops.retrieve(store, question, options or parse_options(None))
        return capped(evidence.to_json(statements=False))

    @server.tool(annotations=read_only)
    @guarded
    def ask(question: str, options: AnyOptions | None = None) -> dict[str, Any]:
        """Answer a question from the graph with its evidence (needs the server's LLM)."""
        with reader() as store:
            answer = ops.ask(store, question, options or parse_options(None))
        return capped(answer.to_json(statements=False))

    @server.tool(annotations=read_only)
    @guarded
    def run_logical_form(program: str, link: bool = True) -> dict[str, Any]:
        """Run a KAG logical form; returns its outputs and each step's Cypher and result."""
        with reader() as store:
            return capped(ops.lf_run(store, program, link))

    @server.tool(annotations=read_only)
    @guarded
    def evaluate_rules(facts: dict[str, Any], ruleset: str | None = None,
                       rules: str | None = None) -> dict[str, Any]:
        """Judge one instance's facts with a loaded rule set (by name) or rules given as
        text; writes nothing."""
        with reader() as store:
            return capped(ops.rules_eval(store, ruleset, rules, facts))

    if config.allow_writes:
        @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False,
                                                 idempotentHint=True, openWorldHint=False))
        @guarded
        def apply_rules(ruleset: str, label: str | None = None) -> dict[str, Any]:
            """Materialise a loaded rule set's conclusions as belongTo edges."""
            with reader(write=True) as store:
                return ops.rules_apply(store, ruleset, label)

    return server
