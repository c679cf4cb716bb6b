"""What an agent passes that is not what it means: the fenced, escaped body `read` answers given back
to `update` (stored with its wrapper and `&lt;` escapes for good), `maintain {"dry_run": "no"}` (ran
for real), a hook payload that is no object (`[]` injected the full block). The real MCP client
(the SDK's stdio client spawning `mem mcp`) and the real CLI."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from memstrata import Memory

pytest.importorskip("mcp")
sys.path.insert(0, str(Path(__file__).parent))
from test_mcp import _data, _session  # noqa: E402

BODY = "Deploy with `make release` when x < 3 and y > 2; never on Fridays."


@pytest.fixture
def root(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.write(BODY, title="Deploy rule", category="ops")
    return m.root


def test_update_refuses_the_fenced_body_read_answers_and_maintain_a_non_boolean(root):
    entry_id = Memory(root).list()[0].id

    async def body(session):
        read = _data(await session.call_tool("read", {"id": entry_id, "raw": True}))
        assert read["body"].startswith(f'<memory id="{entry_id}">') and "&lt;" in read["body"]
        refused = await session.call_tool("update", {"id": entry_id, "body": read["body"]})
        assert refused.is_error and "raw_body" in refused.content[0].text
        again = _data(await session.call_tool("read", {"id": entry_id, "raw": True}))
        assert again["raw_body"] == BODY + "\n" or again["raw_body"].strip() == BODY  # nothing stored
        edited = await session.call_tool("update", {"id": entry_id, "body": read["raw_body"].replace("Fridays", "Mondays")})
        assert not edited.is_error, edited.content[0].text
        wrapped = await session.call_tool("write", {"body": read["body"], "title": "Copy"})
        assert wrapped.is_error and "raw_body" in wrapped.content[0].text
        for value in ("no", "false", 0, "0", None):
            answer = await session.call_tool("maintain", {"dry_run": value})
            assert answer.is_error and "dry_run" in answer.content[0].text, (value, answer.content[0].text)
        assert not (await session.call_tool("maintain", {"dry_run": True})).is_error
        listed = await session.call_tool("write", {"body": "A second note.", "title": "Second", "important": "yes"})
        assert listed.is_error and "important" in listed.content[0].text

    anyio.run(_session, root, body)
    stored = (root / Memory(root).read(entry_id, count_access=False).path).read_text()
    assert "<memory" not in stored and "&lt;" not in stored and "Mondays" in stored
    assert len(Memory(root).list()) == 1


def test_a_hook_payload_that_is_no_object_injects_nothing(root):
    env = {**os.environ, "MEMSTRATA_SERVICE": "off"}
    run = [sys.executable, "-m", "memstrata.cli.app", "autoload", "--hook", "--root", str(root)]
    start = subprocess.run(run, input='{"hook_event_name": "SessionStart"}', capture_output=True, text=True, env=env)
    assert "Deploy rule" in start.stdout  # a real session start still gets the block
    for payload, flags in (("[]", []), ("[]", ["--json"]), ("5", []), ('"hello"', []), ("null", []),
                           ('[{"prompt": "deploy"}]', [])):
        done = subprocess.run(run + flags, input=payload, capture_output=True, text=True, env=env)
        assert done.returncode == 0 and done.stdout == "", (payload, done.stdout)
