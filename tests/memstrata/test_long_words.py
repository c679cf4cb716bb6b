"""One enormous word (issue 27, item 12): a 10 MB single-word file and a 1 MB single-word write are
indexed and recalled in seconds (the Snowball stemmer and the tokenizer are quadratic or slow in
word length; words are cut before either sees them)."""
from __future__ import annotations

import time

import pytest

from memstrata import Memory
from memstrata.retrieval import lexical


@pytest.fixture
def mem(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    m = Memory(tmp_path / "r", embedder=embedder)
    m.init()
    m.write("Widgets are shipped on Tuesdays from the north warehouse.", title="Widget shipping", category="ops")
    return m


def test_words_are_cut_before_stemming():
    assert lexical.words("ok " + "w" * 100_000)[1] == "w" * lexical.MAX_WORD_CHARS
    started = time.monotonic()
    lexical.TermStats(["widgets" * 150_000 + " widgets"])  # 1 MB word: minutes with the whole word stemmed
    assert time.monotonic() - started < 10


def test_a_ten_megabyte_word_and_a_one_megabyte_write_are_indexed_and_recalled_in_seconds(mem):
    (mem.root / "dump").mkdir()
    (mem.root / "dump" / "long.md").write_text("---\ntitle: Gadget dump\n---\n\n" + "widgets" * 1_500_000 + "\n")
    one_mb = mem.write("gizmos" * 170_000, title="Gizmo dump", category="dump")
    started = time.monotonic()
    result = mem.sync()
    assert result["errors"] == {} and result["embedded"] == 1
    found = mem.recall("gadget dump")
    assert "Gadget dump" in [h.title for h in found.results]
    assert one_mb.id in mem.recall("gizmo dump").ids
    assert mem.recall("widgets").results[0].title == "Widget shipping"
    elapsed = time.monotonic() - started
    assert elapsed < 120, elapsed  # 20+ minutes before the cut; ~15 s on a loaded 2-core machine
