"""The recall / sync / reindex / import commands, in-process, with --json."""
from __future__ import annotations

import json

from memstrata.cli.app import main


def _run(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr().out
    return code, out


def test_cli_recall_sync_import(tmp_path, capsys, embedder):
    root = str(tmp_path / "mem")
    assert _run(capsys, "init", "--root", root)[0] == 0
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "pg1", "title": "DB choice", "body": "We chose Postgres for alpha.",
                               "category": "projects/alpha"}) + "\n")
    code, out = _run(capsys, "import", str(src), "--root", root, "--json")
    assert code == 0 and json.loads(out)["imported"] == 1
    code, out = _run(capsys, "recall", "which database did we choose", "--root", root, "--json", "--explain")
    data = json.loads(out)
    assert code == 0 and data["strategy"] == "hybrid" and data["results"][0]["id"] == "pg1"
    assert {"id", "title", "score", "snippet", "signals"} <= set(data["results"][0])
    code, out = _run(capsys, "recall", "Postgres", "--root", root, "--json", "--strategy", "grep")
    assert json.loads(out)["strategy"] == "grep"
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "a", "query": "postgres database"}\n')
    code, out = _run(capsys, "recall", "--queries", str(queries), "--root", root, "--json")
    line = json.loads(out.splitlines()[0])
    assert line["qid"] == "a" and line["results"][0]["id"] == "pg1"
    code, out = _run(capsys, "sync", "--root", root, "--json")
    assert code == 0 and json.loads(out)["embedded"] == 0
    code, out = _run(capsys, "reindex", "--root", root, "--json")
    assert code == 0 and json.loads(out)["embedded"] == 1
    code, _ = _run(capsys, "recall", "x", "--root", root, "--strategy", "nope")
    assert code == 2
