"""Promotion: similarity -> correlation, selection rules, ordering and the cap."""
from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest

from memstrata.scoring.promotion import (
    Promotion, correlation_from_similarity, promotion_changes, select,
)
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
S = Settings()
COLD_LAYERS = {"cold", "archive"}


def aged(days: float, id: str, **kw) -> Entry:
    return Entry(id=id, title=id, updated=NOW - timedelta(days=days), **kw)


def test_correlation_mapping():
    assert correlation_from_similarity(0.7, 0.7) == pytest.approx(1.0)
    assert correlation_from_similarity(1.0, 0.7) == pytest.approx(1.5)
    assert correlation_from_similarity(0.85, 0.7) == pytest.approx(1.25)
    assert correlation_from_similarity(0.35, 0.7) == pytest.approx(0.75)
    assert correlation_from_similarity(0.0, 0.7) == pytest.approx(0.5)
    assert correlation_from_similarity(-0.3, 0.7) == pytest.approx(0.5)
    assert correlation_from_similarity(1.0, 1.0) == pytest.approx(1.5)
    assert correlation_from_similarity(0.2, 0.0) == pytest.approx(1.1)


def test_select_filters_and_orders():
    cands = [
        (aged(3, "hot"), 0.95),                       # hot: not in layers
        (aged(40, "cold_hi"), 0.9),
        (aged(40, "cold_lo"), 0.6),                   # below threshold
        (aged(120, "arch", status="archived"), 0.8),
        (aged(15, "warm"), 0.99),                     # warm: not in layers
        (aged(40, "high", importance=0.8), 0.97),     # high: kept
        (aged(40, "imp", important=True), 0.97),      # important: kept
        (aged(40, "exp", status="expired"), 0.99),
        (aged(50, "edge"), 0.7),                      # exactly the threshold
    ]
    got = select(cands, NOW, S, 0.7, COLD_LAYERS, 50, True)
    assert [p.entry_id for p in got] == ["cold_hi", "arch", "edge"]
    assert got[0].from_tier == "cold" and got[1].from_tier == "archive"
    assert got[2].new_correlation == pytest.approx(1.0)


def test_keep_important_off_lets_high_through():
    cands = [(aged(40, "high", importance=0.8), 0.97)]
    assert [p.entry_id for p in select(cands, NOW, S, 0.7, COLD_LAYERS, 50, False)] == ["high"]


def test_layers_restrict_source_tier():
    cands = [(aged(40, "c"), 0.9), (aged(120, "a", status="archived", tier="archive"), 0.9), (aged(120, "old"), 0.9)]
    assert [p.entry_id for p in select(cands, NOW, S, 0.7, {"archive"}, 50, True)] == ["a"]
    # old by the calendar but never archived by maintain (which counts days in use): cold, as maintain says
    assert {p.entry_id: p.from_tier for p in select(cands, NOW, S, 0.7, COLD_LAYERS, 50, True)}["old"] == "cold"


def test_max_count_keeps_most_similar():
    cands = [(aged(40, f"e{i:02d}"), 0.70 + i / 100) for i in range(20)]
    got = select(cands, NOW, S, 0.7, COLD_LAYERS, 5, True)
    assert [p.entry_id for p in got] == ["e19", "e18", "e17", "e16", "e15"]
    assert select(cands, NOW, S, 0.7, COLD_LAYERS, 0, True) == []


def test_duplicate_chunks_count_once_with_best_similarity():
    e = aged(40, "e")
    got = select([(e, 0.75), (e, 0.9), (e, 0.8)], NOW, S, 0.7, COLD_LAYERS, 50, True)
    assert len(got) == 1 and got[0].similarity == 0.9


def test_new_weight_and_changes():
    e = aged(40, "e", importance=0.5, access_count=2, tier="cold")
    [p] = select([(e, 0.85)], NOW, S, 0.7, COLD_LAYERS, 50, True)
    assert p.new_correlation == pytest.approx(1.25)
    # promotion makes it hot (days 0) but is no use: access_count stays 2
    assert p.new_weight == pytest.approx(1.5 * 1.0 * math.log(3) * 1.25)
    changes = promotion_changes(p, e, NOW)
    assert changes == {"tier": "hot", "status": "active", "last_access": NOW,
                       "context_correlation": p.new_correlation, "weight": p.new_weight}


def test_defaults_come_from_settings():
    s = Settings(promote_threshold=0.5, promote_max=1)
    got = select([(aged(40, "a"), 0.55), (aged(40, "b"), 0.6)], NOW, s)
    assert [p.entry_id for p in got] == ["b"]
    assert isinstance(got[0], Promotion)


def test_the_calibrated_rule_brings_back_the_memory_the_task_is_about():
    """No explicit threshold (the hook's --promote, `mem promote` without --threshold): every candidate
    at promote_threshold (0.65); the most similar one from promote_best_cosine (0.5); recall's likeliest
    answer from promote_min_relevance (0.05). The issue's runbook at 0.585 comes back; its runner-up does not."""
    runbook, backup, retro, vpn = aged(200, "runbook", status="archived"), aged(60, "backup"), aged(60, "retro"), aged(45, "vpn")
    got = select([(runbook, 0.585), (backup, 0.47), (retro, 0.31)], NOW, S)
    assert [p.entry_id for p in got] == ["runbook"] and got[0].from_tier == "archive"
    assert got[0].new_correlation == pytest.approx(correlation_from_similarity(0.585, S.promote_best_cosine))
    # the best below promote_best_cosine stays, unless recall judged it (or another candidate) the likely answer
    assert select([(backup, 0.47), (retro, 0.31)], NOW, S) == []
    got = select([(backup, 0.47), (retro, 0.31), (vpn, 0.2)], NOW, S, relevance={"retro": 0.2, "vpn": 0.06, "hot": 0.9})
    assert [p.entry_id for p in got] == ["retro"]
    assert select([(backup, 0.47)], NOW, S, relevance={"backup": 0.04}) == []
    # an explicit threshold is that rule alone (mem promote --threshold 0.5)
    assert select([(runbook, 0.585), (backup, 0.47)], NOW, S, threshold=0.5, relevance={"backup": 0.9})[0].entry_id == "runbook"
    assert len(select([(runbook, 0.585), (backup, 0.47)], NOW, S, threshold=0.5, relevance={"backup": 0.9})) == 1


def test_the_best_candidate_is_judged_among_the_layers_asked_and_an_important_one_stays_put():
    hot, high, cold = aged(2, "hot"), aged(40, "high", importance=0.9), aged(40, "cold")
    # the most similar entry is hot (no promotion needed): the best cold one is judged on its own
    assert [p.entry_id for p in select([(hot, 0.9), (cold, 0.55)], NOW, S)] == ["cold"]
    # the most similar cold entry is important: it keeps its place, and the runner-up is not promoted in its stead
    assert select([(high, 0.6), (cold, 0.55)], NOW, S) == []
