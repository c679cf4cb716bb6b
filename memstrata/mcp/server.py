"""The MCP server: `mem mcp` serves one warm `Memory` over stdio with the official `mcp` SDK.

One `Memory` per process: the embedding model and the LanceDB table are loaded once (a
background warm-up starts at launch), so every call after the first is fast. Each tool maps
to one `Memory` method; calls are serialised (one at a time) because the engine is a single
writer per tree. An engine error comes back as an MCP tool error (`isError: true`) whose
text is the one-line reason; anything unforeseen is a tool error too, never a dead server.

Tools: write, recall, read, list, update, delete, restore, history, autoload, promote,
maintain (dry run by default), daily. A tool whose feature is not in this build answers
with a tool error that says so. Each tool declares its answer's JSON schema (outputSchema,
memstrata/mcp/schemas.py) and answers structured content that fits it.

The tools and their arguments are in tools.py, the shaping of their answers (JSON, note
text escaped or fenced) in answers.py; this module owns the engine and the server around them.
"""
from __future__ import annotations

import logging
import sys
import threading
import traceback

from memstrata import __version__
from memstrata.errors import MemstrataError
from memstrata.mcp.answers import result
from memstrata.mcp.tools import register_tools

log = logging.getLogger("memstrata.mcp")

SERVER_NAME = "memstrata"
INSTRUCTIONS = """memstrata is a local, persistent memory: Markdown entries in a category tree with semantic recall.
- Before answering about past work, decisions, preferences or people: call `recall` with the question.
- When you learn something worth keeping across sessions (a decision, a preference, a fact, a lesson):
  call `write` with a short title and a category such as projects/<name>, people, decisions,
  preferences, long-term or meetings. Use `share: true` for what other agents should see.
- In a category a title names one subject: to record that a fact changed, write it with the same title
  (or `update` the entry). If `write` answers action "conflict", tell the user (unless `refines` is true):
  both versions are kept and the current version is reported.
- Use `update` to change an entry in place, `delete` to move it to the trash (`restore` brings it back).
- Run `maintain` (dry run by default) to preview aging; pass dry_run=false to apply it. Tell the user
  what its `forgotten` list names (moved to the trash; `restore` brings each back).
"""


class ToolEngine:
    """The warm engine behind the tools: one Memory, one call at a time, errors as results."""

    def __init__(self, root=None, memory=None):
        from memstrata.memory import Memory

        self.memory = memory if memory is not None else Memory(root)
        self._lock = threading.Lock()

    # -- warm-up --------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Load the model and open the vector table (in the background at launch)."""
        with self._lock:
            for problem in self.memory.warm_up():  # a cold start is slower, not broken
                log.warning("warm-up: %s", problem)

    def start_warm_up(self, delay: float = 1.0) -> threading.Thread:
        thread = threading.Timer(delay, self.warm_up)
        thread.name = "memstrata-warm-up"
        thread.daemon = True
        thread.start()
        return thread

    # -- calling --------------------------------------------------------------------------
    def call(self, fn, *args, **kwargs):
        """Run fn under the lock; MemstrataError -> tool error with its one-line message."""
        with self._lock:
            try:
                return result(fn(*args, **kwargs))
            except MemstrataError as exc:
                return result(exc.message, is_error=True)
            except Exception as exc:  # noqa: BLE001 - never a dead server
                log.error("tool failed:\n%s", traceback.format_exc())
                if isinstance(exc, OSError):
                    message = f"{exc.strerror or exc}" + (f": {exc.filename}" if getattr(exc, "filename", None) else "")
                else:
                    message = f"internal error: {type(exc).__name__}: {exc}"
                return result(" ".join(message.split()), is_error=True)


def _one_line_arguments_error(name: str, exc: BaseException) -> str | None:
    """A one-line reason for arguments that do not fit a tool's schema (None if it is not that)."""
    from pydantic import ValidationError

    cause = exc
    while cause is not None and not isinstance(cause, ValidationError):
        cause = cause.__cause__
    if cause is None:
        return None
    parts = []
    for err in cause.errors():
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return f"invalid arguments for {name}: " + "; ".join(parts)


def _server_class():
    """MCPServer (mcp 2.x) with argument errors made one line; FastMCP on mcp 1.x."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP

        return FastMCP, dict(log_level="WARNING")

    from memstrata.mcp.guard import INVALID_ARGUMENTS

    class Server(MCPServer):
        async def call_tool(self, name, arguments, context=None):
            if isinstance(arguments, dict) and INVALID_ARGUMENTS in arguments:
                return result(str(arguments[INVALID_ARGUMENTS]), is_error=True)
            if isinstance(arguments, dict) and "id" not in arguments:
                for old in ("ref", "entry_id"):  # the names these tools had before `id` everywhere
                    if old in arguments:
                        arguments = {**{k: v for k, v in arguments.items() if k != old}, "id": arguments[old]}
                        break
            allowed = getattr(self, "memstrata_arguments", {}).get(name)
            unknown = sorted(set(arguments or {}) - allowed) if allowed is not None else []
            if unknown:  # a misspelt argument silently ignored would do something else than asked
                return result(f"{name} takes no argument {', '.join(map(repr, unknown))}; it takes "
                               f"{', '.join(sorted(allowed))}", is_error=True)
            try:
                return await super().call_tool(name, arguments, context)
            except UnexpectedToolError as exc:  # e.g. an answer that does not fit the tool's outputSchema
                log.error("tool %s failed: %r", name, exc.__cause__ or exc)
                return result(f"internal error in {name}: {' '.join(str(exc.__cause__ or exc).split())[:300]}",
                               is_error=True)
            except ToolError as exc:
                message = _one_line_arguments_error(name, exc)
                if message is None:
                    raise
                return result(message, is_error=True)

        async def run_stdio_async(self) -> None:
            """The SDK's stdio transport, with stdin lines passed through guard.guard_line."""
            from io import TextIOWrapper

            import anyio
            from mcp.server.stdio import stdio_server

            from memstrata.mcp.guard import GuardedLines

            stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
            async with stdio_server(stdin=GuardedLines(stdin)) as (read_stream, write_stream):
                await self._lowlevel_server.run(read_stream, write_stream,
                                                self._lowlevel_server.create_initialization_options())

    return Server, dict(title="memstrata memory", description="Local, offline, persistent memory for agents.",
                        version=__version__, log_level="WARNING")


def build_server(root=None, memory=None, warm: bool = True):
    """The MCP server object with every tool registered (not running yet).

    With `warm`, the model and table are loaded in the background a moment after launch
    (after the handshake has had its chance), so the first real call does not wait as long.
    """
    Server, options = _server_class()
    engine = ToolEngine(root, memory)
    server = Server(SERVER_NAME, instructions=INSTRUCTIONS, **options)
    register_tools(server, engine)
    server.memstrata_engine = engine  # for tests and embedding
    if warm:
        engine.start_warm_up()
    return server


def serve(root=None, warm: bool = True) -> None:
    """Run the server over stdio until the client closes the connection."""
    import os

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    server = build_server(root, warm=warm)
    server.run("stdio")
