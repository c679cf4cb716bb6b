"""bench/import_variants.py's table and index proof: an identical index is found from the texts embedded, never assumed."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import variant_index  # noqa: E402
import variant_table  # noqa: E402


def test_the_fingerprint_is_the_multiset_of_texts_per_kind():
    rows = [("entry", "a turn"), ("sentence", "one sentence of it"), ("context", "before\na turn")]
    same = variant_index.fingerprint(list(reversed(rows)), 1)
    assert variant_index.fingerprint(rows, 1)["hash"] == same["hash"]
    assert same["rows"] == {"entry": 1, "sentence": 1, "context": 1}
    # the same text as another kind of chunk, or one row fewer, is another index
    assert variant_index.fingerprint([("entry", "a turn"), ("entry", "one sentence of it"),
                                      ("context", "before\na turn")], 1)["hash"] != same["hash"]
    assert variant_index.fingerprint(rows[:2], 1)["hash"] != same["hash"]
    assert variant_index.fingerprint(rows + [rows[1]], 1)["hash"] != same["hash"]


def _results(fig_b, hash_b):
    speed = {"turns": 100, "cpu": 10.0, "rows": {"entry": 100}, "wall": 20.0}
    base = {"import": speed, "til_index": {"hash": "h1", "entries": 10, "rows": {"entry": 10}},
            "til_hit1": [1.0] * 8 + [0.0] * 2}
    other = {"import": {**speed, "cpu": 5.0}, "til_index": {"hash": hash_b, "entries": 10, "rows": {"entry": 10}},
             "til_hit1": fig_b}
    return {"today": base, "cheap": other}


def test_a_variant_with_the_same_texts_is_marked_identical_and_its_speed_counts():
    results = _results([1.0] * 8 + [0.0] * 2, "h1")
    text = variant_table.table(results, ["today", "cheap"])
    assert "identical index" in text
    assert variant_table.verdicts(results, ["today", "cheap"]) == {"today": "yes", "cheap": "yes"}
    assert variant_table.best_speed(results, ["today", "cheap"]) == "cheap"
    assert "**cheap**, 20.0 LoCoMo turns per CPU s" in text


def test_a_variant_losing_recall_beyond_the_noise_is_not_the_best_speed():
    results = _results([1.0] * 4 + [0.0] * 6, "h2")
    text = variant_table.table(results, ["today", "cheap"])
    assert "identical index" not in text
    assert "**Δ-0.400**" in text
    assert variant_table.best_speed(results, ["today", "cheap"]) == "today"
    # a figure of the first variant the other lacks: not all measured, never the best
    results["cheap"].pop("til_hit1")
    assert variant_table.verdicts(results, ["today", "cheap"])["cheap"] == "not all measured"


def test_the_memo_gives_the_models_vectors_and_counts_what_a_fresh_process_would_embed(embedder):
    texts = ["The cat sat on the mat.", "A second, longer text about the weather in Lisbon in May.",
             "The cat sat on the mat."]
    direct = embedder.embed(texts)
    counter = variant_index.memo_embeddings(embedder)
    try:
        counter.reset()
        first = embedder.embed(texts)
        again = embedder.embed(texts[1:])
        assert np.allclose(first, direct, atol=1e-5) and np.allclose(again, direct[1:], atol=1e-5)
        assert counter.texts == 5
        assert counter.tokens == sum(embedder.count_tokens(t) for t in texts + texts[1:])
        assert variant_index.memo_embeddings(embedder) is counter  # installed once
    finally:
        del embedder.embed  # the session's model as it was (the method of its class)
        del embedder.__dict__["_variant_counter"]
