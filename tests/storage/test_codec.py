"""Frontmatter round trips for both source vocabularies; unknown fields survive."""
from datetime import datetime, timezone

import pytest

from memstrata.errors import CorruptEntry
from memstrata.storage import codec

VIKING = """---
id: mem_20260327_153000
title: "今日重要决策"
importance: high
important: false
tags: [决策, 战略, 猫经理]
created: 2026-03-27T15:30:00+08:00
last_access: 2026-03-27T15:30:00+08:00
access_count: 1
context_correlation: 1.0
retention: 90
current_layer: L0
target_layer: hot
weight: 10.0
review_status: pending_review
last_reviewed: null
next_review: null
review_count: 0
owner: 猫经理
---

# 今日重要决策
"""

PME = """---
title: Alpha project database
status: archived
created: 2026-01-02
updated: 2026-02-03
version: 3
tags: database, alpha
importance: 0.9
related: [abc, def]
expires: 2027-01-01
custom_field:
  nested: [1, 2]
---
Body text.
"""


def test_viking_vocabulary_is_read_and_written_canonically():
    entry = codec.parse(VIKING)
    assert entry.id == "mem_20260327_153000"
    assert entry.title == "今日重要决策"
    assert entry.importance == 0.8 and entry.important is False
    assert entry.tags == ["决策", "战略", "猫经理"]
    assert entry.created == datetime(2026, 3, 27, 7, 30, tzinfo=timezone.utc)
    assert (entry.layer, entry.tier, entry.weight, entry.retention) == ("L0", "hot", 10.0, 90)
    assert entry.review_status == "pending_review"
    assert entry.extra == {"owner": "猫经理"}
    text = codec.render(entry)
    assert "target_layer" not in text and "tier: hot" in text and "owner: 猫经理" in text
    assert codec.parse(text) == entry


def test_first_document_vocabulary_round_trips_with_unknown_fields():
    entry = codec.parse(PME)
    assert entry.status == "archived" and entry.version == 3
    assert entry.tags == ["database", "alpha"]
    assert entry.related == ["abc", "def"] and entry.importance == 0.9
    assert entry.expires == datetime(2027, 1, 1, tzinfo=timezone.utc)
    assert entry.extra == {"custom_field": {"nested": [1, 2]}}
    again = codec.parse(codec.render(entry))
    assert again == entry
    assert again.body == "Body text.\n"


@pytest.mark.parametrize("word,level,flag", [("low", 0.2, False), ("medium", 0.5, False), ("high", 0.8, False),
                                             ("important", 1.0, True), (0.3, 0.3, False), ("0.7", 0.7, False)])
def test_importance_vocabularies(word, level, flag):
    assert codec.normalise_importance(word) == (level, flag)


def test_wrong_types_are_tolerated_not_fatal():
    entry = codec.parse("---\ntitle: x\nversion: 'two'\ncreated: 'last tuesday'\ntags: 'a b'\naccess_count: -3\n---\nb")
    assert entry.version == 1 and entry.created is None and entry.tags == ["a", "b"] and entry.access_count == 0


@pytest.mark.parametrize("text", ["---\ntitle: [unclosed\n---\nb", "---\n- a list\n---\nb", "---\ntitle: x\nno end"])
def test_malformed_frontmatter_is_a_clear_error(text):
    with pytest.raises(CorruptEntry):
        codec.parse(text)


def test_file_without_frontmatter_is_an_entry_with_fallback_title():
    entry = codec.parse("just text\n", fallback_title="notes")
    assert entry.title == "notes" and entry.body == "just text\n"


def test_frontmatter_dates_read_aliases_as_the_entry_does():
    from datetime import datetime, timezone

    from memstrata.storage.codec import entry_from_frontmatter, frontmatter_dates

    names = ("created", "updated", "last_access")
    for data in ({"created_at": "2026-01-02T03:04:05Z", "last_accessed": "2026-02-01"},
                 {"created": "2026-01-02T03:04:05Z", "created_at": "2025-01-01T00:00:00Z", "updated": "not a date"},
                 {"updated_at": "2026-03-01T10:00:00+02:00", "updated": "2026-03-02T10:00:00Z"}):
        entry = entry_from_frontmatter(data, "")
        assert frontmatter_dates(data, names) == [entry.created, entry.updated, entry.last_access]
    assert frontmatter_dates({"created_at": "2026-01-02T03:04:05Z"}, ("created",)) == \
        [datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)]
