"""kgdb's tools for agent hosts over MCP (stdio): ``kgdb serve --mcp``. The same operations
as the HTTP API (:class:`~kgdb.serve.operations.Operations`) on one graph, chosen at start;
read-only tools unless started with ``--allow-writes`` (then ``apply_rules`` is added). The
host starts the process as its user, so stdio needs no token. Needs the ``mcp`` package."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import ValidationError

from kgdb.errors import KgdbError
from kgdb.retrieve.registry import AnyOptions, parse_options
from kgdb.serve.operations import Operations, ServeConfig
from kgdb.serve.tenants import Tenants

F = TypeVar("F", bound=Callable[..., Any])


def _expected_errors(tool: F) -> F:
    """kgdb's expected failures (and invalid options) as the tool's one-line error: the
    server shows hosts only a generic message for any other exception."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(tool)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return tool(*args, **kwargs)
        except KgdbError as exc:
            raise ToolError(str(exc).splitlines()[0]) from None
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise ToolError(f"options.{where}: {error['msg']}") from None
    return wrapper  # type: ignore[return-value]


def build_server(config: ServeConfig, graph: str | None = None, *, embedder: Any = None,
                 llm: Any = None) -> Any:
    """The MCP server: tools over ``graph`` (default: the configured graph or database)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    tenants = Tenants(config.settings)
    name = graph or tenants.default
    ops = Operations(config, embedder=embedder, llm=llm)
    server = MCPServer("kgdb", instructions=(
        f"Knowledge-graph retrieval over the graph {name!r} (kgdb). Use retrieve for "
        "evidence, ask for an answer with evidence, run_logical_form for KAG logical forms, "
        "evaluate_rules to judge facts with a loaded rule set."))
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    def reader() -> Any:
        return tenants.store(name).view(read_only=True, timeout_s=config.timeout_s,
                                        metadata={"app": "kgdb", "endpoint": "mcp"})

    @server.tool(annotations=read_only)
    @_expected_errors
    def health() -> dict[str, Any]:
        """The engine, its version, the graph's indexes and the installed procedures."""
        return ops.health(reader(), name)

    @server.tool(annotations=read_only)
    @_expected_errors
    def retrieve(question: str, options: AnyOptions | None = None) -> dict[str, Any]:
        """Evidence for a question without an answer. options: a solver and its options,
        e.g. {"solver": "document-graph"} or {"solver": "pattern", "pattern": [["Kismet",
        "directed_by", "UNKNOWN 1"]]}."""
        evidence = ops.retrieve(reader(), question, options or parse_options(None))
        return evidence.to_json(statements=False)

    @server.tool(annotations=read_only)
    @_expected_errors
    def ask(question: str, options: AnyOptions | None = None) -> dict[str, Any]:
        """Answer a question from the graph with its evidence (needs the server's LLM)."""
        answer = ops.ask(reader(), question, options or parse_options(None))
        return answer.to_json(statements=False)

    @server.tool(annotations=read_only)
    @_expected_errors
    def run_logical_form(program: str, link: bool = True) -> dict[str, Any]:
        """Run a KAG logical form; returns its outputs and each step's Cypher and result."""
        return ops.lf_run(reader(), program, link)

    @server.tool(annotations=read_only)
    @_expected_errors
    def evaluate_rules(facts: dict[str, Any], ruleset: str | None = None,
                       rules: str | None = None) -> dict[str, Any]:
        """Judge one instance's facts with a loaded rule set (by name) or rules given as
        text; writes nothing."""
        return ops.rules_eval(reader(), ruleset, rules, facts)

    if config.allow_writes:
        @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False,
                                                 idempotentHint=True, openWorldHint=False))
        @_expected_errors
        def apply_rules(ruleset: str, label: str | None = None) -> dict[str, Any]:
            """Materialise a loaded rule set's conclusions as belongTo edges."""
            store = tenants.store(name).view(timeout_s=config.timeout_s,
                                             metadata={"app": "kgdb", "endpoint": "mcp"})
            return ops.rules_apply(store, ruleset, label)

    return server
