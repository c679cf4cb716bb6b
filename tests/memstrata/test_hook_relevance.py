"""The prompt hook earns its tokens: only relevant hits, once per session, nothing for small talk."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memstrata import Memory


@pytest.fixture()
def work(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    # written on different days: entries of one sitting lend each other relevance (recall's sitting prior)
    m.write("We picked PostgreSQL 16 for the orders database because of logical replication.",
            title="Database choice", category="work", created="2026-11-02T10:00:00Z")
    m.write("The on-call rotation changes every Monday at 10am.", title="Oncall", category="work",
            created="2026-11-20T10:00:00Z")
    return m


def test_a_prompt_gets_relevant_hits_once_per_session_and_no_hot_entries(work):
    first = work.autoload("which database did we pick for orders and why?", hot=False, session_id="s1")
    assert [i.entry.title for i in first.items] == ["Database choice"]
    assert all(i.section == "relevant" for i in first.items)
    again = work.autoload("remind me about the orders database choice", hot=False, session_id="s1")
    assert again.items == [] and again.markdown() == ""
    other = work.autoload("remind me about the orders database choice", hot=False, session_id="s2")
    assert [i.entry.title for i in other.items] == ["Database choice"]
    assert (work.root / ".cache" / "hook-sessions").is_dir()


def test_the_hook_injects_nothing_for_hello(work):
    env = {**os.environ, "MEMSTRATA_HOME": str(work.root), "MEMSTRATA_SERVICE": "off"}
    payload = {"session_id": "abc", "cwd": str(work.root), "hook_event_name": "UserPromptSubmit", "prompt": "hello"}
    proc = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "autoload", "--hook"],
                          input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=300)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert work.autoload("hello", hot=False, session_id="x").items == []


def test_recall_cli_says_nothing_relevant_and_json_keeps_the_figures(work):
    env = {**os.environ, "MEMSTRATA_HOME": str(work.root), "MEMSTRATA_SERVICE": "off"}
    cli = [sys.executable, "-m", "memstrata.cli.app", "recall", "what's the weather in Paris tomorrow?"]
    human = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=300)
    assert human.returncode == 0 and "nothing relevant" in human.stdout
    data = json.loads(subprocess.run(cli + ["--json", "--min-relevance", "0"], capture_output=True, text=True,
                                     env=env, timeout=300).stdout)
    assert data["results"] and all(0.0 <= r["relevance"] <= 1.0 for r in data["results"])
    assert data["best_relevance"] == max(r["relevance"] for r in data["results"])


def test_a_compressed_entry_reaches_the_agent_without_its_note_for_people(work, monkeypatch):
    long_text = ("We picked PostgreSQL 16 for the orders database because of logical replication. "
                 "MySQL lost on replication lag in the load test. Alice owns the schema work. "
                 "Bob owns the data import. The migration is planned for the second week of December. "
                 "The old cluster stays read-only for a month after the switch, then it is shut down. "
                 "Every service moves its connection string in the same release, behind a feature flag. "
                 "The load test is repeated on the new cluster before the switch is approved by the team.")
    written = work.write(long_text, title="Orders database decision", category="decisions",
                         created="2026-06-01T10:00:00Z")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-12-01T10:00:00Z")
    Memory(work.root, embedder=work.embedder).maintain()
    stored = work.resolve(written.id)
    assert stored.layer != "L0" and "mem decompress" in stored.body
    loaded = Memory(work.root, embedder=work.embedder).autoload("orders database replication decision", hot=False,
                                                                 session_id="c1")
    item = next(i for i in loaded.items if i.entry.id == written.id)
    assert "mem decompress" not in item.text and "Full text in" not in item.text and item.text.strip()
    assert "mem decompress" not in loaded.markdown()


def test_the_hook_leaves_out_hits_far_weaker_than_the_best(work):
    """Hits that share only a name with the prompt (relevance several times below the best) stay
    out of the context; the relevance, not the ranker's score, decides."""
    for title, text in (("Deploy process", "Atlas deploys go through the staging cluster first."),
                        ("Observability", "Atlas dashboards live in Grafana under the team folder."),
                        ("Maria Chen", "Maria Chen is the tech lead of Atlas.")):
        work.write(text, title=title, category="work", created="2026-10-01T10:00:00Z")
    work.write("For Atlas billing we chose PostgreSQL because it has strong transactions and mature tooling.",
               title="Atlas billing database", category="work", created="2026-11-25T10:00:00Z")
    answer = work.recall("which database did we choose for Atlas billing and why?", k=10)
    best = max(h.relevance for h in answer.results)
    loaded = work.autoload("which database did we choose for Atlas billing and why?", hot=False, session_id="w")
    titles = [i.entry.title for i in loaded.items]
    assert titles[0] == "Atlas billing database"
    strong = {h.title for h in answer.results if h.relevance >= 0.3 * best}
    assert set(titles) == strong and len(strong) < len(answer.results)  # some weak hits were left out
