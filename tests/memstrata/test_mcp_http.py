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
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR") if key in os.environ}
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
