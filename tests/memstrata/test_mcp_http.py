"""`mem mcp --http` as a remote agent sees it: a real server process, the SDK's streamable HTTP client, the token."""
import json
import os
import subprocess
import sys
import time

import anyio
import httpx2
import pytest

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

TOKEN = "test-token-0123456789abcdef"


def _env(**extra):
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "XDG_STATE_HOME")
           if key in os.environ}
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                "MEMSTRATA_SERVICE": "off", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    env.update(extra)
    return env


def _start(root, env):
    proc = subprocess.Popen([sys.executable, "-m", "memstrata.cli.app", "mcp", "--http", "--port", "0",
                             "--root", str(root)], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True)
    url = token = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (url is None or token is None):
        line = proc.stderr.readline()
        if not line:
            break
        if line.startswith("memstrata MCP over HTTP at "):
            url = line.split(" at ", 1)[1].strip()
        elif line.startswith("bearer token: "):
            token = line.split(": ", 1)[1].strip()
    assert url, "the server did not say where it listens"
    return proc, url, token


def _data(result):
    return result.structured_content if result.structured_content is not None else json.loads(result.content[0].text)


async def _with_session(url, token, body):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)


def test_http_tools_need_the_token(tmp_path):
    from memstrata import Memory

    root = tmp_path / "mem"
    Memory(root).init()  # the server serves a tree `mem init` made
    proc, url, token = _start(root, _env(MEMSTRATA_MCP_TOKEN=TOKEN))
    try:
        assert token == "$MEMSTRATA_MCP_TOKEN" and url.startswith("http://127.0.0.1:")

        async def work(session):
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"write", "recall", "read", "delete"} <= names
            wrote = _data(await session.call_tool("write", {"body": "The staging database is on port 5433.",
                                                            "title": "Staging DB port", "category": "ops"}))
            found = _data(await session.call_tool("recall", {"query": "which port does staging use?", "k": 3}))
            return wrote, found

        wrote, found = anyio.run(_with_session, url, TOKEN, work)
        assert wrote["action"] == "created"
        assert found["results"][0]["id"] == wrote["id"]
        before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md") if ".git" not in p.parts)

        hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "write", "arguments": {"body": "Injected without a token", "category": "ops"}}}
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        for auth in (None, "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x"):
            sent = dict(headers, **({"Authorization": auth} if auth else {}))
            answer = httpx2.post(url, json=hello, headers=sent, timeout=30)
            assert answer.status_code == 401, (auth, answer.status_code)
            assert answer.headers.get("www-authenticate") == "Bearer"
        with pytest.raises(Exception):
            anyio.run(_with_session, url, "wrong-token", lambda s: s.list_tools())
        after = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md") if ".git" not in p.parts)
        assert after == before
        assert not any("Injected" in p.read_text() for p in root.rglob("*.md"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_http_prints_a_fresh_token_when_none_is_set(tmp_path):
    env = _env()
    env.pop(TOKEN_ENV := "MEMSTRATA_MCP_TOKEN", None)
    proc, url, token = _start(tmp_path / "mem", env)
    try:
        assert token and len(token) >= 32 and TOKEN_ENV not in token
        assert httpx2.get(url, timeout=30).status_code == 401

        async def tools(session):
            return [t.name for t in (await session.list_tools()).tools]

        assert "write" in anyio.run(_with_session, url, token, tools)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _start_logged(root, env, log):
    """The server with its stderr in a file (its size is part of what is checked)."""
    handle = open(log, "w")
    proc = subprocess.Popen([sys.executable, "-m", "memstrata.cli.app", "mcp", "--http", "--port", "0",
                             "--root", str(root)], env=env, stderr=handle, stdout=subprocess.DEVNULL, text=True)
    handle.close()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        for line in open(log).read().splitlines():
            if line.startswith("memstrata MCP over HTTP at "):
                return proc, line.split(" at ", 1)[1].strip()
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(open(log).read())


def test_half_open_connections_cannot_lock_out_the_token_and_sessions_expire(tmp_path):
    """Issue 27 item 13: 300 connections that send partial headers; the right token still answers in
    time, they are closed after the header deadline, descriptors stay bounded, the log stays small,
    and an idle MCP session expires."""
    import socket
    from urllib.parse import urlsplit

    from memstrata import Memory

    root = tmp_path / "mem"
    m = Memory(root)
    m.init()
    for key, value in (("mcp_http_header_seconds", "2"), ("mcp_http_max_connections", "64"),
                       ("mcp_http_session_seconds", "3")):
        m.config_set(key, value)
    log = tmp_path / "server.log"
    proc, url = _start_logged(root, _env(MEMSTRATA_MCP_TOKEN=TOKEN), log)
    socks = []
    try:
        where = urlsplit(url)
        for _ in range(300):
            s = socket.create_connection((where.hostname, where.port), timeout=10)
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")  # never ends
            socks.append(s)
        started = time.monotonic()

        async def tools(session):
            return [t.name for t in (await session.list_tools()).tools]

        assert "write" in anyio.run(_with_session, url, TOKEN, tools)
        assert time.monotonic() - started < 30
        fds = len(os.listdir(f"/proc/{proc.pid}/fd"))
        assert fds < 64 + 60, fds
        time.sleep(3)
        closed = 0
        for s in socks:  # every half-open connection was closed by the server (EOF or reset)
            s.settimeout(5)
            try:
                closed += s.recv(1) == b""
            except OSError:
                closed += 1
        assert closed == len(socks)

        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        first = httpx2.post(url, json=hello, headers=headers, timeout=30)
        session = first.headers.get("mcp-session-id")
        assert first.status_code == 200 and session
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        assert httpx2.post(url, json=listing, headers=dict(headers, **{"mcp-session-id": session}),
                           timeout=30).status_code == 200  # alive while in use
        time.sleep(6)
        gone = httpx2.post(url, json=listing, headers=dict(headers, **{"mcp-session-id": session}), timeout=30)
        assert gone.status_code == 404  # expired after 3 s idle
        assert log.stat().st_size < 20_000, log.read_text()[-2000:]
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        proc.wait(timeout=30)


def test_the_log_is_rate_limited():
    import logging

    from memstrata.mcp.http_guard import RateLimit

    now = [0.0]
    limit = RateLimit(per_minute=3, total_per_minute=5, clock=lambda: now[0])

    def record(msg):
        return logging.LogRecord("x", logging.WARNING, __file__, 1, msg, (), None)

    passed = [limit.filter(record("same %s")) for _ in range(100)]
    assert passed.count(True) == 3
    assert sum(limit.filter(record(f"kind {n}")) for n in range(100)) == 2  # 5 in all per minute
    now[0] = 61.0
    again = record("same %s")
    assert limit.filter(again) and "98 more log lines held back" in again.getMessage()
