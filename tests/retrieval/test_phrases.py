"""retrieval.phrases.token_sequence: which tokens carry content (the phrases scoring.reply_use compares)."""
from memstrata.retrieval.phrases import COMMON, NONE, UNCOMMON, token_sequence, unit_sequences


def test_words_are_stemmed_and_stop_words_thanks_and_assent_carry_no_content():
    seq = token_sequence("Thanks! Your support really means a lot; run patronictl failover.")
    content = {t for t, c in seq if c}
    assert {"support", "patronictl", "failov"} <= content
    assert not {"thank", "your", "a"} & content
    # a word of the bundled model's vocabulary is common; a name or a command is not
    assert dict(seq)["support"] == COMMON and dict(seq)["patronictl"] == UNCOMMON
    assert [t for t, _ in seq][:3] == ["thank", "your", "support"]


def test_names_with_digits_count_bare_numbers_contractions_and_addresses_do_not():
    seq = dict(token_sequence("on v2 at 10:00 ox, don't see https://github.com/acme/patronictl-docs"))
    assert seq["v2"] and not seq["10"] and not seq["00"] and not seq["ox"] and not seq["on"]
    assert not seq["don't"] and "github" not in seq and "acm" not in seq


def test_cjk_goes_character_by_character_function_words_carry_no_content():
    zh = token_sequence("数据库的密码")
    assert [t for t, _ in zh] == list("数据库的密码") and [c for _, c in zh] == [True, True, True, False, True, True]
    assert [c for _, c in token_sequence("如果需要重启")] == [NONE] * 4 + [COMMON] * 2


def test_a_memory_is_read_in_parts_the_title_with_the_first():
    long = "\n\n".join(" ".join(f"w{p}x{i}" for i in range(50)) for p in range(3))
    parts = unit_sequences("Failover runbook", long)
    assert len(parts) == 3 and parts[0][0][0] == "failov" and len(parts[0]) == 52
    short = unit_sequences("Title", "One short line.\n\nAnother short line.")
    assert len(short) == 1 and [t for t, _ in short[0]][-2:] == ["short", "line"]
    assert len(unit_sequences("", " ".join(["word"] * 400))) == 3  # cut in parts of 160, 30 shared


def test_nothing_in_nothing_out():
    assert token_sequence("") == [] and token_sequence(None) == [] and token_sequence("— … !") == []


def test_without_the_vocabulary_every_word_of_content_is_common(monkeypatch):
    """No vocabulary to tell a name from a word: no phrase is taken for a memory's own (fewer uses found)."""
    from memstrata.retrieval import phrases

    monkeypatch.setattr(phrases, "common_words", lambda: frozenset())
    assert dict(token_sequence("run patronictl failover"))["patronictl"] == COMMON


def test_plurals_of_common_words_are_common_and_other_languages_are_not_judged():
    seq = dict(token_sequence("Restore the backups onto the replicas, then run the retries with pgbackrest."))
    assert seq["backup"] == COMMON and seq["replica"] == COMMON and seq["pgbackrest"] == UNCOMMON
    german = token_sequence("Danach müssen wir prüfen, ob die Sicherung vollständig ist und wiederherstellen.")
    assert "müssen" in dict(german) and {c for _, c in german} == {NONE}  # not judged: its stop words are unknown
