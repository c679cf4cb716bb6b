"""The MCP server as an agent sees it: the SDK's stdio client spawning `mem mcp` as a real process."""
import json
import os
import sys
import time
from pathlib import Path

import anyio
import pytest

from memstrata import Memory

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

REQUIRED_TOOLS = {"write", "recall", "read", "list", "update", "delete", "restore", "history", "autoload",
                  "promote", "maintain"}


def _params(root):
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "XDG_STATE_HOME")
           if key in os.environ}  # XDG_STATE_HOME: the machine key of `mem secrets allow` (tests: a temp one)
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
                "MEMSTRATA_SHARED": str(root.parent / "shared"), "MEMSTRATA_AGENT": "mcp-agent"})
    script = Path(sys.executable).with_name("mem")  # the installed `mem` entry point, as agents run it
    command, args = (str(script), []) if script.is_file() else (sys.executable, ["-m", "memstrata.cli.app"])
    return StdioServerParameters(command=command, args=args + ["mcp", "--root", str(root)], env=env)


def _data(result):
    """The JSON a tool answered (structured content when given, else the text)."""
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def _session(root, body):
    with open(os.devnull, "w") as devnull:
        async with stdio_client(_params(root), errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)


def test_mcp_session_write_recall_read_and_errors(tmp_path):
    root = tmp_path / "mem"
    Memory(root).init()

    async def body(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert REQUIRED_TOOLS <= set(tools)
        for tool in tools.values():
            assert tool.description and tool.input_schema["type"] == "object"
        assert tools["write"].input_schema["required"] == ["body"]
        assert "query" in tools["recall"].input_schema["properties"]
        assert tools["maintain"].input_schema["properties"]["dry_run"]["default"] is True

        wrote = await session.call_tool("write", {
            "body": "We chose PostgreSQL over MongoDB for the alpha project because we need transactions.",
            "title": "Alpha database choice", "category": "projects/alpha", "tags": ["database", "decision"],
            "importance": "high"})
        assert not wrote.is_error, wrote.content[0].text
        written = _data(wrote)
        assert written["action"] == "created" and written["path"].startswith("projects/alpha/")
        shared = _data(await session.call_tool("write", {"body": "The user prefers dark mode in every editor.",
                                                         "title": "UI preference", "category": "preferences",
                                                         "share": True}))
        assert shared["action"] == "created" and shared["shared"]["agent"] == "mcp-agent"

        started = time.monotonic()
        found = await session.call_tool("recall", {"query": "which database did we pick for alpha?", "k": 3})
        first_recall = time.monotonic() - started
        assert not found.is_error, found.content[0].text
        answer = _data(found)
        assert answer["results"][0]["id"] == written["id"]
        assert "PostgreSQL" in answer["results"][0]["snippet"]

        started = time.monotonic()
        again = await session.call_tool("recall", {"query": "what colour theme does the user like?"})
        second_recall = time.monotonic() - started
        assert _data(again)["results"][0]["title"] == "UI preference"
        assert second_recall < max(5.0, first_recall)  # the model and the table stay loaded

        read = _data(await session.call_tool("read", {"id": written["id"]}))  # `id`: one name in every tool
        assert read["title"] == "Alpha database choice" and "transactions" in read["body"]
        assert read["frontmatter"]["tags"] == ["database", "decision"]

        # Errors are tool errors with the one-line reason, and the server keeps serving.
        missing = await session.call_tool("read", {"ref": "0123456789ab"})
        assert missing.is_error and missing.content[0].text == "no entry with id 0123456789ab"
        bad = await session.call_tool("write", {"body": "x", "category": "../outside"})
        assert bad.is_error and "\n" not in bad.content[0].text and "category" in bad.content[0].text
        wrong_type = await session.call_tool("recall", {"query": "x", "k": "many"})
        assert wrong_type.is_error and "\n" not in wrong_type.content[0].text
        assert "k" in wrong_type.content[0].text

        listed = _data(await session.call_tool("list", {"category": "projects"}))
        assert listed["count"] == 1 and listed["entries"][0]["id"] == written["id"]
        dry = _data(await session.call_tool("maintain", {}))
        assert dry.get("dry_run") is True
        # the read above is in the journal: a dry run says it would fold it, not that it did
        assert dry["accesses_folded"] == 0 and dry["accesses_to_fold"] >= 1
        updated = _data(await session.call_tool("update", {"id": written["id"],
                                                           "body": "We moved alpha to MySQL last week."}))
        assert updated["action"] == "updated" and updated["version"] == 2
        history = await session.call_tool("history", {"id": written["id"][:6]})
        assert not history.is_error and "1" in history.content[0].text
        assert _data(history)["id"] == written["id"]  # a prefix in, the full id out
        deleted = _data(await session.call_tool("delete", {"id": written["id"]}))
        assert deleted["id"] == written["id"]
        restored = _data(await session.call_tool("restore", {"entry_id": written["id"]}))  # the old name works
        assert restored["status"] == "active"
        return True

    assert anyio.run(_session, root, body)
    assert (root / "projects" / "alpha" / "INDEX.md").is_file()  # the tree is the same tree the CLI sees
    assert "agent: mcp-agent" in (tmp_path / "shared" / "preferences" / "ui-preference.md").read_text(encoding="utf-8")


def test_engine_errors_and_crashes_are_tool_errors(tmp_path, embedder):
    """An engine error answers a tool error with its one-line message; a crash an internal error."""
    from memstrata import Memory
    from memstrata.mcp.server import ToolEngine

    engine = ToolEngine(memory=Memory(tmp_path / "m", embedder=embedder))
    engine.memory.init()
    result = engine.call(lambda: engine.memory.read("0123456789ab"))
    assert result.is_error and result.content[0].text == "no entry with id 0123456789ab"
    crash = engine.call(lambda: 1 / 0)
    assert crash.is_error and crash.content[0].text.startswith("internal error: ZeroDivisionError")


def test_unknown_arguments_are_refused_and_tags_may_be_a_comma_string(tmp_path):
    root = tmp_path / "mem"
    Memory(root).init()

    async def body(session):
        wrong = await session.call_tool("write", {"body": "Backups run nightly.", "categroy": "ops"})
        assert wrong.is_error and "categroy" in wrong.content[0].text
        wrote = _data(await session.call_tool("write", {"body": "Backups run nightly at two.", "category": "ops",
                                                        "tags": "backup, ops"}))
        read = _data(await session.call_tool("read", {"ref": wrote["id"], "count_access": False}))
        return read["frontmatter"]["tags"]

    assert anyio.run(_session, root, body) == ["backup", "ops"]
    assert not list((root / "ops").glob("backups-run-nightly.md"))  # the refused call wrote nothing


def test_every_tool_declares_an_output_schema_its_answers_fit(tmp_path):
    """list_tools gives each tool an outputSchema; every answer's structured content validates against it."""
    import jsonschema

    root = tmp_path / "mem"
    Memory(root).init()

    async def body(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        for tool in tools.values():
            schema = tool.output_schema
            assert schema and schema["type"] == "object" and schema["properties"], tool.name
            jsonschema.Draft202012Validator.check_schema(schema)
        answers: dict[str, list] = {}

        async def call(name, arguments):
            result = await session.call_tool(name, arguments)  # the SDK client checks the schema too
            assert not result.is_error, (name, result.content[0].text)
            assert result.structured_content is not None, name
            answers.setdefault(name, []).append(result.structured_content)
            return result.structured_content

        text = "We chose PostgreSQL for the alpha project because we need transactions."
        entry = await call("write", {"body": text, "title": "Alpha DB", "category": "projects/alpha", "tags": "db"})
        await call("write", {"body": text, "title": "Alpha DB", "category": "projects/alpha"})  # duplicate
        await call("write", {"body": "The user prefers dark mode.", "title": "Theme", "category": "preferences",
                             "share": True})
        changed = await call("write", {"body": "The user switched to light mode.", "title": "theme",
                                       "category": "preferences"})  # the same subject: its next version
        assert (changed["action"], changed["version"], changed["previous_version"], changed["rule"]) == (
            "conflict", 2, 1, "title") and "both versions kept, current is v2" in changed["message"]
        await call("recall", {"query": "which database did alpha choose?", "k": 3})
        await call("recall", {"query": "zebra migration routes in Kenya", "k": 3})
        await call("read", {"id": entry["id"]})
        await call("list", {})
        await call("update", {"id": entry["id"], "body": "Alpha moved to PostgreSQL 17 with JSONB."})
        await call("history", {"id": entry["id"]})
        await call("autoload", {"context": "database work on alpha"})
        await call("promote", {"context": "database work on alpha", "dry_run": True})
        await call("maintain", {})
        await call("daily", {"text": "Met Bob about the billing release."})
        await call("daily", {"text": "Lunch with Alice."})
        await call("delete", {"id": entry["id"]})
        await call("restore", {"id": entry["id"]})
        await call("maintain", {"dry_run": False})
        assert set(answers) == set(tools), "every tool was called"
        for name, results in answers.items():
            for data in results:
                jsonschema.validate(data, tools[name].output_schema)
        return True

    assert anyio.run(_session, root, body)
