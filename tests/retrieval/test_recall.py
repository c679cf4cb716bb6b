"""Recall on real LanceDB and the real bundled model: write then recall, filters, sync, fallbacks."""
from __future__ import annotations

import json
import shutil

import pytest

from memstrata import Memory


def _seed(m):
    ids = {}
    ids["db"] = m.write("We chose Postgres for project alpha because we need JSONB columns and solid transactions.",
                        title="Database choice", category="projects/alpha", tags=["db", "decision"]).id
    ids["ui"] = m.write("The user wants the editor in dark mode at night; light themes strain the eyes.",
                        title="Editor theme", category="projects/beta", tags=["ui"]).id
    ids["cat"] = m.write("Our cat Miso likes to sleep on the warm laptop keyboard.", title="Miso",
                         category="personal").id
    ids["zh"] = m.write("用户喜欢在晚上使用深色模式，因为屏幕太亮会伤眼睛。", title="界面偏好",
                        category="projects/beta").id
    return ids


def test_write_then_recall_by_paraphrase(mem):
    ids = _seed(mem)
    res = mem.recall("which relational store did the team pick?", k=3)
    assert res.strategy == "hybrid"
    assert res.results[0].id == ids["db"]
    res = mem.recall("pet that naps on the computer")
    assert res.results[0].id == ids["cat"]
    hit = res.results[0].to_dict()
    assert {"id", "title", "score", "snippet", "category", "tier", "path"} <= set(hit)


def test_chinese_sub_phrase(mem):
    ids = _seed(mem)
    for query in ("深色模式", "伤眼睛", "屏幕太亮"):
        res = mem.recall(query, k=3)
        assert res.results and res.results[0].id == ids["zh"], query
    mixed = mem.recall("dark mode 深色模式", k=2)
    assert {ids["zh"], ids["ui"]} == set(mixed.ids)


def test_filters_and_subtree(mem):
    ids = _seed(mem)
    res = mem.recall("dark mode theme", category="projects")
    assert set(res.ids) <= {ids["db"], ids["ui"], ids["zh"]} and ids["ui"] in res.ids
    res = mem.recall("dark mode theme", category="projects/alpha")
    assert res.ids == [ids["db"]] or set(res.ids) <= {ids["db"]}
    assert mem.recall("postgres", tags=["ui"]).ids in ([ids["ui"]], [])
    assert ids["db"] in mem.recall("postgres", tags=["db"]).ids
    assert mem.recall("postgres", since="2999-01-01").ids == []
    assert mem.recall("postgres", status="archived").ids == []
    explained = mem.recall("postgres transactions", explain=True).results[0].to_dict()
    assert explained["signals"]["text_rank"] == 1 and "postgres" in explained["signals"]["matched_terms"]


def test_delete_and_update_follow(mem):
    ids = _seed(mem)
    mem.delete(ids["cat"])
    assert ids["cat"] not in mem.recall("cat sleeping on a laptop").ids
    mem.restore(ids["cat"])
    assert mem.recall("cat sleeping on a laptop").ids[0] == ids["cat"]
    mem.update(ids["cat"], "Our dog Rex guards the garden gate every morning.")
    assert mem.recall("dog guarding the gate").ids[0] == ids["cat"]


def test_hand_edits_and_removals_picked_up(mem):
    ids = _seed(mem)
    entry = mem.read(ids["cat"], count_access=False)
    path = mem.root / entry.path
    path.write_text(path.read_text().replace("Our cat Miso likes to sleep on the warm laptop keyboard.",
                                             "The sailing boat Aurora is moored at the north harbour."))
    (mem.root / mem.read(ids["ui"], count_access=False).path).unlink()
    res = mem.recall("where is the sailboat docked?")  # recall syncs cheaply first
    assert res.strategy == "hybrid" and res.ids[0] == ids["cat"]
    assert ids["ui"] not in mem.recall("editor dark mode").ids
    other = Memory(mem.root, embedder=mem.embedder)  # a second process sees a clean index
    assert other.sync() == {"embedded": 0, "updated": 0, "removed": 0, "errors": {}, "model_changed": False,
                            "model": mem.embedder.name}


def test_recall_never_walks_the_tree_while_the_watcher_names_the_changes(mem, monkeypatch):
    """A warm Memory looks only at the files its inotify watcher saw change: hand edits,
    deletions and hand copies are picked up without a walk of the tree."""
    from memstrata.retrieval import sync

    ids = _seed(mem)
    mem.recall("cat on the keyboard")  # the first recall walks once
    walks = []
    real_walk = sync.iter_entry_files
    monkeypatch.setattr(sync, "iter_entry_files", lambda root: walks.append(1) or real_walk(root))
    mem.recall("database choice")
    path = mem.root / mem.read(ids["cat"], count_access=False).path
    with open(path, "a", encoding="utf-8") as f:  # in place: the folder's mtime does not move
        f.write("\nMiso also chases the red laser pointer dot across the hallway.\n")
    assert mem.recall("chasing a red laser pointer").ids[0] == ids["cat"]
    (mem.root / mem.read(ids["ui"], count_access=False).path).unlink()
    assert ids["ui"] not in mem.recall("editor dark mode at night").ids
    copy = mem.root / "projects" / "alpha" / "copy-of-db.md"
    copy.write_bytes((mem.root / mem.read(ids["db"], count_access=False).path).read_bytes())
    res = mem.recall("JSONB columns and transactions")
    assert res.ids.count(ids["db"]) == 1  # the copy is not indexed a second time
    assert walks == []
    copy.unlink()
    assert mem.sync()["embedded"] == 0 and walks == []  # `mem sync` in a warm process: no walk either
    other = Memory(mem.root, embedder=mem.embedder)  # a second process, walking: the index is in step
    assert other.sync()["embedded"] == 0 and other.sync()["removed"] == 0


def test_sync_counts_only_changed(mem, embedder):
    ids = _seed(mem)
    entry = mem.read(ids["db"], count_access=False)
    path = mem.root / entry.path
    path.write_text(path.read_text().replace("Postgres", "SQLite"))
    (mem.root / mem.read(ids["cat"], count_access=False).path).unlink()
    result = Memory(mem.root, embedder=embedder).sync()
    assert (result["embedded"], result["removed"]) == (1, 1)


class _Renamed:
    """The same vectors under another model name: a model change as the index sees it."""

    def __init__(self, inner, name):
        self._inner, self.name = inner, name
        self.dim, self.max_tokens = inner.dim, inner.max_tokens
        self.calls = 0

    def embed(self, texts, batch_size=32, progress=None):
        self.calls += len(texts)
        return self._inner.embed(texts, batch_size, progress)

    def embed_query(self, text):
        return self._inner.embed_query(text)

    def count_tokens(self, text):
        return self._inner.count_tokens(text)


def test_model_change_reembeds(mem, embedder):
    _seed(mem)
    other = _Renamed(embedder, "renamed-model")
    seen = []
    result = Memory(mem.root, embedder=other).sync(progress=lambda d, t: seen.append((d, t)))
    assert result["model_changed"] and result["embedded"] == 4 and "re-embedded" in result["message"]
    assert seen and seen[-1][0] == seen[-1][1] and other.calls >= 4
    assert json.loads((mem.root / ".vectors" / "meta.json").read_text())["model"] == "renamed-model"


def test_fallbacks_without_index_or_model(mem):
    ids = _seed(mem)
    shutil.rmtree(mem.root / ".vectors")
    fresh = Memory(mem.root, embedder=mem.embedder)
    res = fresh.recall("Postgres JSONB")  # a missing index of a few entries is built before answering
    assert res.strategy == "hybrid" and res.ids[0] == ids["db"] and fresh.state.vector_index().exists()
    shutil.rmtree(mem.root / ".vectors")
    res = Memory(mem.root, embedder=mem.embedder).recall("Postgres JSONB", strategy="text")  # no model asked: grep
    assert res.strategy == "grep" and res.ids[0] == ids["db"]
    assert fresh.recall("Postgres", strategy="index").ids[0] == ids["db"]
    assert fresh.recall("深色模式", strategy="grep").ids[0] == ids["zh"]
    fresh.sync()
    fresh.config_set("embedding_model", "/nonexistent/model/path")
    broken = Memory(mem.root)  # loads the model from config: fails
    res = broken.recall("Postgres JSONB")  # index up to date: its full-text side answers
    assert res.strategy == "text" and res.ids[0] == ids["db"] and res.notes
    written = broken.write("Kiwi fruit is rich in vitamin C.", title="Kiwi", category="personal")
    res = broken.recall("kiwi vitamin")  # index stale and no model: grep answers
    assert res.strategy == "grep" and res.ids[0] == written.id


def test_import_and_batch(mem, tmp_path):
    lines = [{"id": f"n{i}", "title": f"Note {i}", "body": text, "category": "notes/imported",
              "tags": ["imp"], "created": f"2024-01-0{i + 1}T10:00:00Z", "source": "test"}
             for i, text in enumerate(["Bananas are yellow and sweet.", "The train to Lyon leaves at nine.",
                                       "Backups run every night at two."])]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n{bad json\n")
    result = mem.import_jsonl(src)
    assert result["imported"] == 3 and result["embedded"] == 3 and len(result["errors"]) == 1
    out = mem.recall_batch([{"qid": "a", "query": "when does the railway trip depart"},
                            {"qid": "b", "query": "nightly data copies"}], k=2)
    assert [o["qid"] for o in out] == ["a", "b"]
    assert out[0]["results"][0]["id"] == "n1" and out[1]["results"][0]["id"] == "n2"


def test_archived_rank_below_active(mem):
    text = "The quarterly planning meeting moved to Thursday afternoon."
    a = mem.write(text, title="Planning moved", category="meetings").id
    b = mem.write(text, title="Planning moved", category="meetings", force=True).id
    path = mem.root / mem.read(b, count_access=False).path
    path.write_text(path.read_text().replace("status: active", "status: archived"))
    res = mem.recall("when is the planning meeting?", k=2)
    # one text, one hit (retrieval/rerank.distinct_top): the better-scored copy, which is the active one
    assert res.ids == [a] and res.results[0].status == "active"
    assert mem.recall("planning meeting", status="archived").ids == [b]


def test_term_statistics_carried_across_writes_equal_a_full_rebuild(mem):
    """After writes, updates and deletes the index reuses the texts and BM25/feedback statistics
    of unchanged entries; they must equal statistics built from scratch."""
    from memstrata.retrieval import lexical

    ids = _seed(mem)
    mem.recall("postgres transactions")  # loads texts and both statistics
    index = mem.state.vector_index()
    mem.write("Friday deploys are frozen until the billing migration is done.", title="Deploy freeze",
              category="projects/alpha", tags=["deploy"])
    mem.update(ids["db"], "We moved project alpha to SQLite for the embedded build.")
    mem.delete(ids["ui"])
    frame = index.frame()
    carried_texts = index.texts(frame)
    assert frame._reuse is not None  # the texts were carried, not reloaded
    stats, df = index.term_stats(frame), index.doc_freq(frame)
    fresh_texts = [index._en_texts(None)[i] or "" for i in frame.ids]
    assert carried_texts == fresh_texts and any("SQLite" in t for t in carried_texts)
    full = lexical.TermStats(fresh_texts)
    assert (stats.tf, stats.df, stats.length, stats.n) == (full.tf, full.df, full.length, full.n)
    assert df == lexical.doc_freqs(fresh_texts)
    # the inverted index was carried too (rows of unchanged entries copied), and ranks as a fresh one
    assert stats._postings_from is not None
    query = {"sqlite": 1.0, "billing": 1.0, "deploy": 1.0}
    assert stats.top(query, 0.9, 0.5, 10) == full.top(query, 0.9, 0.5, 10) != {}
    assert mem.recall("embedded build database").ids[0] == ids["db"]


def test_a_new_process_starts_from_the_cached_statistics(mem):
    """The first process that counts the term statistics leaves them on disk; a new Memory
    loads them, reads only the entries written since, and ranks exactly as a full count."""
    from memstrata.retrieval import lexical, stats_cache

    ids = _seed(mem)
    first = mem.recall("postgres transactions", explain=True)
    assert (mem.root / ".vectors" / stats_cache.CACHE_FILE).is_file()
    mem.write("Friday deploys are frozen until the billing migration is done.", title="Deploy freeze",
              category="projects/alpha")
    fresh = Memory(mem.root, embedder=mem.embedder)
    index = fresh.state.vector_index()
    frame = index.frame()
    index.texts(frame)
    assert frame._reuse is not None and frame._reuse[0].version == -1  # carried from the disk cache
    assert frame._reuse[0]._stats._postings is not None  # the inverted index too: no rebuild
    texts = [index._en_texts(None)[i] or "" for i in frame.ids]
    full = lexical.TermStats(texts)
    stats = index.term_stats(frame)
    assert ([dict(c) for c in stats.tf], stats.df, stats.length) == ([dict(c) for c in full.tf], full.df, full.length)
    assert index.doc_freq(frame) == lexical.doc_freqs(texts)
    query = {"postgres": 1.0, "friday": 1.0, "deploys": 1.0}
    assert stats.top(query, 0.9, 0.5, 10) == full.top(query, 0.9, 0.5, 10) != {}
    assert frame._reuse is None  # both carried: the cached frame is let go
    assert fresh.recall("postgres transactions").ids[0] == first.ids[0] == ids["db"]
    (mem.root / ".vectors" / stats_cache.CACHE_FILE).write_bytes(b"not a cache")  # damaged: counted again
    assert Memory(mem.root, embedder=mem.embedder).recall("postgres transactions").ids[0] == ids["db"]


@pytest.mark.parametrize("strategy", ["auto", "text", "grep"])
def test_until_a_date_includes_that_whole_day(mem, strategy):
    mem.write("Vendor follow up on the licence renewal.", title="Vendor", category="work",
              created="2026-12-01T15:30:00Z")
    assert mem.recall("vendor licence", until="2026-12-01", strategy=strategy, min_relevance=0).ids
    assert not mem.recall("vendor licence", until="2026-11-30", strategy=strategy, min_relevance=0).ids
    assert not mem.recall("vendor licence", until="2026-12-01T15:00:00Z", strategy=strategy, min_relevance=0).ids
    assert mem.recall("vendor licence", since="2026-12-01", strategy=strategy, min_relevance=0).ids


def test_a_text_recall_indexes_a_hand_made_file_first(mem):
    """--strategy text needs no model to answer, but a changed file is indexed before it answers
    (it used to fall back to grep, saying the model could not load)."""
    mem.write("alpha zqkeepword apple", title="a", category="notes")
    (mem.root / "notes" / "hand.md").write_text("---\ntitle: hand\n---\nhand zqhandword\n", encoding="utf-8")
    fresh = Memory(mem.root, embedder=mem.embedder)
    kept = fresh.recall("zqkeepword", strategy="text", min_relevance=0)
    assert kept.strategy == "text" and kept.results[0].title == "a"
    assert not any("cannot load" in n for n in kept.notes)
    assert fresh.recall("zqhandword", strategy="text", min_relevance=0).results[0].title == "hand"


def test_hyphenated_words_are_found_by_their_parts(mem):
    mem.write("We upgraded the cluster to postgres-15 last week.", title="Upgrade", category="ops")
    mem.write("Schedule a follow-up with the vendor about gpt-4o-mini pricing.", title="Vendor", category="ops")
    for query, title in (("postgres", "Upgrade"), ("postgres-15", "Upgrade"), ("follow up vendor", "Vendor"),
                         ("mini pricing", "Vendor")):
        hits = mem.recall(query, strategy="text", min_relevance=0).results
        assert hits and hits[0].title == title, query


def test_a_hand_made_file_is_found_under_the_id_read_takes(mem):
    mem.write("Printers are on the third floor.", title="Office", category="notes")
    path = mem.root / "notes" / "printers.md"
    path.write_text("The printer client for floor 3 is CUPS.\n", encoding="utf-8")
    hit = mem.recall("printer client floor 3", min_relevance=0).results[0]
    assert hit.id == "path:notes/printers.md"  # a read never writes (issue 25): no id until `mem sync`
    assert mem.read(hit.id, count_access=False).body == "The printer client for floor 3 is CUPS.\n"
    assert path.read_text(encoding="utf-8") == "The printer client for floor 3 is CUPS.\n"
    mem.sync()
    hit = mem.recall("printer client floor 3", min_relevance=0).results[0]
    assert not hit.id.startswith("path:") and hit.id in {e.id for e in mem.list()}
    assert mem.read(hit.id, count_access=False).body == "The printer client for floor 3 is CUPS.\n"


def test_until_the_last_day_or_a_basic_date(mem):
    mem.write("Vendor follow up on the licence renewal.", title="Vendor", category="work",
              created="2026-12-01T15:30:00Z")
    assert mem.recall("vendor licence", until="9999-12-31", min_relevance=0).ids
    assert mem.recall("vendor licence", until="20261201", min_relevance=0).ids


def test_an_empty_note_is_listed_below_the_notes_that_answer(tmp_path, embedder):
    """A vault's tag page (frontmatter only), a note of one heading: their titles match a question
    word for word (0.95 once) but they answer nothing; listed, never above a note with text."""
    vault = tmp_path / "vault"
    (vault / "Net").mkdir(parents=True)
    (vault / "Net" / "DNS Resolver.md").write_text("---\ntags: [net]\n---\n")
    (vault / "Net" / "DNS Resolver Setup.md").write_text("# DNS Resolver\n")
    (vault / "Net" / "unbound.md").write_text("---\ntitle: Resolver\n---\nThe DNS resolver forwards queries to "
                                              "9.9.9.9 and caches answers for an hour.\n")
    (vault / "Net" / "k8s.md").write_text("Kubernetes pods get their DNS from CoreDNS in kube-system.\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    for strategy, scope in [("hybrid", None), ("vector", None), ("text", None), ("grep", None), ("hybrid", "Net")]:
        hits = m.recall("DNS resolver", strategy=strategy, category=scope, count_access=False).results
        paths = [h.path for h in hits]
        assert paths[0] == "Net/unbound.md", (strategy, paths)
        assert "Net/DNS Resolver.md" in paths and "Net/DNS Resolver Setup.md" in paths  # still listed
        assert all(h.relevance <= hits[0].relevance for h in hits)
    from memstrata.retrieval.hits import no_text

    assert no_text("Title\n## Setup\n---\n", "Title") and not no_text("Title\nUse port 53.", "Title")
    # an untitled one-line write is titled by its line: its body is that line, no empty note
    assert not no_text("Staging runs in Frankfurt since March.", "Staging runs in Frankfurt since March.")
    assert no_text("Databases", "Databases") and no_text("# Setting up the build server", "Setting up the build server")


@pytest.mark.parametrize("apostrophe", ["'", "’", "ʼ"])
def test_a_word_beside_a_curly_apostrophe_is_found_as_typed_on_a_keyboard(mem, apostrophe):
    """Notes pasted from Slack, docs or macOS autocorrect carry ’: "QA’s" is found by "QA", and a
    question typed either way reads the same words."""
    qa = mem.write(f"The QA{apostrophe}s regression suite runs nightly on the staging cluster.",
                   title="Nightly tests", category="team")
    mem.write("The pager rotation changes every Monday at nine.", title="Pager", category="team")
    for query in ("QA", "when does the QA's suite run?", "when does the QA’s suite run?"):
        hits = mem.recall(query, strategy="text", min_relevance=0.0, count_access=False).results
        assert hits and hits[0].id == qa.id, (query, [h.title for h in hits])
    terms = [mem.recall(q, strategy="text", min_relevance=0.0, count_access=False, explain=True).results[0]
             .signals.get("matched_terms") for q in ("what's the QA's suite?", "what’s the QA’s suite?")]
    assert terms[0] == terms[1]
