"""retrieval.phrases.token_sequence: which tokens carry content (the phrases scoring.reply_use compares)."""
from memstrata.retrieval.phrases import token_sequence


def test_words_are_stemmed_and_stop_words_thanks_and_assent_carry_no_content():
    seq = token_sequence("Thanks! Your support really means a lot; run patronictl failover.")
    content = {t for t, c in seq if c}
    assert {"support", "patronictl", "failov"} <= content
    assert not {"thank", "your", "a"} & content
    assert [t for t, _ in seq][:3] == ["thank", "your", "support"]


def test_numbers_count_short_words_do_not_and_cjk_goes_character_by_character():
    seq = dict(token_sequence("on v2 at 10:00 ox"))
    assert seq["v2"] and seq["10"] and seq["00"] and not seq["ox"] and not seq["on"]
    zh = token_sequence("数据库的密码")
    assert [t for t, _ in zh] == list("数据库的密码") and [c for _, c in zh] == [True, True, True, False, True, True]


def test_nothing_in_nothing_out():
    assert token_sequence("") == [] and token_sequence(None) == [] and token_sequence("— … !") == []
