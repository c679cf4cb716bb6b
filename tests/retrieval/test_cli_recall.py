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
    line = json.loads(out.splitlines()[0])  # JSON Lines, one answer per query, with --json too
    assert line["qid"] == "a" and line["results"][0]["id"] == "pg1"
    code, out = _run(capsys, "sync", "--root", root, "--json")
    assert code == 0 and json.loads(out)["embedded"] == 0
    code, out = _run(capsys, "reindex", "--root", root, "--json")
    assert code == 0 and json.loads(out)["embedded"] == 1
    code, _ = _run(capsys, "recall", "x", "--root", root, "--strategy", "nope")
    assert code == 2


def test_a_k_past_the_candidate_pool_is_honoured(tmp_path, capsys, embedder):
    """`-k 100000` on 130 matching entries returns all 130 (was at most 100: the ranker's pool), and
    the first 100 of `-k 120` are what `-k 100` returns."""
    root = str(tmp_path / "mem")
    assert _run(capsys, "init", "--root", root)[0] == 0
    src = tmp_path / "many.jsonl"
    src.write_text("".join(json.dumps({"title": f"Deploy note {i}", "body": f"The deploy script number {i} pushes "
                                       f"build {i} to the staging cluster."}) + "\n" for i in range(130)))
    assert _run(capsys, "import", str(src), "--root", root, "--json")[0] == 0

    def ids(k, *more):
        code, out = _run(capsys, "recall", "deploy script staging", "-k", str(k), "--min-relevance", "0",
                         "--no-touch", "--root", root, "--json", *more)
        assert code == 0
        return [h["id"] for h in json.loads(out)["results"]]

    assert len(set(ids(100000))) == 130
    assert len(set(ids(100000, "--strategy", "vector"))) == 130
    assert ids(120)[:100] == ids(100) and len(ids(120)) == 120


def test_vector_recall_is_judged_on_the_words_as_hybrid_is(tmp_path, capsys, embedder):
    """`--strategy vector` ranks by meaning alone, but whether a hit answers is judged on the same
    evidence as hybrid's (the words included): 'helm', found only in a note's body, answered in
    hybrid and said "nothing relevant" in vector (0.008 against the cut-off's 0.01)."""
    root = str(tmp_path / "mem")
    assert _run(capsys, "init", "--root", root)[0] == 0
    src = tmp_path / "notes.jsonl"
    src.write_text("".join(json.dumps({"title": t, "body": b}) + "\n" for t, b in [
        ("Kitchen", "The sourdough starter needs feeding twice a day with rye flour and water at room temperature."),
        ("Ops", "Deploy the billing service with helm after the canary passes."),
        ("Calendar", "Quarterly planning meeting moved to Thursday.")]))
    assert _run(capsys, "import", str(src), "--root", root, "--json")[0] == 0
    for query, title in [("helm", "Ops"), ("room temperature water", "Kitchen")]:
        found = {}
        for strategy in ("hybrid", "vector"):
            code, out = _run(capsys, "recall", query, "--strategy", strategy, "--no-touch", "--root", root, "--json")
            data = json.loads(out)
            assert code == 0 and data["strategy"] == strategy and data["results"], (query, strategy, data)
            found[strategy] = data["results"][0]
        assert found["vector"]["title"] == found["hybrid"]["title"] == title
    code, out = _run(capsys, "recall", "hello, how are you today?", "--strategy", "vector", "--root", root, "--json")
    assert code == 0 and json.loads(out)["results"] == []  # small talk still brings nothing
