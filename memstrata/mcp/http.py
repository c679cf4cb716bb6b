"""`mem mcp --http`: the same MCP tools over the SDK's streamable HTTP transport, behind a bearer token."""
from __future__ import annotations

import hmac
import json
import os
import secrets
import socket
import sys

TOKEN_ENV = "MEMSTRATA_MCP_TOKEN"
PATH = "/mcp"


class BearerGate:
    """ASGI middleware: an HTTP request without `Authorization: Bearer <token>` gets 401 and reaches nothing."""

    def __init__(self, app, token: str):
        if not token:
            raise ValueError("a bearer token is required")
        self.app = app
        self._token = token.encode("utf-8")

    def allowed(self, scope) -> bool:
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization":
                scheme, _, given = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._token)
        return False

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and not self.allowed(scope):
            body = json.dumps({"error": "unauthorized", "message": "a valid bearer token is required"}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "websocket":  # not part of the transport
            await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)


def build_app(token: str, root=None, memory=None, host: str = "127.0.0.1", warm: bool = True,
              session_seconds: float | None = None):
    """The ASGI app: the MCP server's streamable HTTP app (at /mcp) behind BearerGate.

    `session_seconds`: an MCP session idle this long expires (None: the tree's
    mcp_http_session_seconds setting)."""
    from memstrata.mcp.server import build_server

    server = build_server(root, memory, warm=warm)
    if session_seconds is None:
        session_seconds = server.memstrata_engine.memory.state.settings.mcp_http_session_seconds
    app = server.streamable_http_app(streamable_http_path=PATH, host=host,
                                     session_idle_timeout=float(session_seconds))
    gate = BearerGate(app, token)
    gate.memstrata_engine = server.memstrata_engine
    return gate


def serve_http(root=None, host: str = "127.0.0.1", port: int = 8765, warm: bool = True, announce=None,
               token: str | None = None) -> None:
    """Bind host:port, say where and with which token (`announce`), serve until interrupted.

    The token is $MEMSTRATA_MCP_TOKEN when set (then it is not printed), else a new random one.
    """
    import uvicorn

    from memstrata.mcp.http_guard import guarded_protocol, quiet_logging

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    quiet_logging(sys.stderr)  # rate-limited: a flood of bad connections cannot fill the disk
    given = token or os.environ.get(TOKEN_ENV)
    token = given or secrets.token_urlsafe(32)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)  # connections wait in the backlog until the server takes them
    bound = sock.getsockname()[1]
    app = build_app(token, root=root, host=host, warm=warm)
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    info = {"url": f"http://{shown}:{bound}{PATH}", "host": host, "port": bound,
            "token": None if given else token, "token_printed": not given}
    if announce is not None:
        announce(info)
    settings = app.memstrata_engine.memory.state.settings
    protocol = guarded_protocol(settings.mcp_http_header_seconds, settings.mcp_http_max_connections)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", http=protocol, log_config=None,
                                           timeout_keep_alive=5))
    server.run(sockets=[sock])
