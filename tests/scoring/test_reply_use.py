"""Which shown memories a reply used (scoring.reply_use): pure, no IO."""
from memstrata.retrieval.phrases import token_sequence, unit_sequences
from memstrata.scoring import reply_use
from memstrata.scoring.reply_use import needed


def used(reply: str, asked: str, shown: dict[str, str]) -> list[str]:
    """reply_use.used over texts, read as the capture reads them (retrieval.phrases)."""
    memories = {k: reply_use.shown(unit_sequences("", v)) for k, v in shown.items()}
    said = reply_use.Asked()
    said.add(token_sequence(asked))
    return reply_use.used(token_sequence(reply), said, memories)

FAILOVER = ("To fail over the orders database, promote the Patroni replica with `patronictl failover orders`, "
            "check replication lag is zero first, then repoint PgBouncer and announce in #incidents.")
KAFKA = ("When the events consumer lags, check the partition skew with kcat, scale the consumer deployment to "
         "the partition count (12), and never reset offsets without a backfill plan.")
RETENTION = "Raw events are kept 400 days in the warehouse; the daily aggregates are kept forever."
SHOWN = {"failover": FAILOVER, "kafka": KAFKA, "retention": RETENTION}


def test_a_reply_quoting_the_memory_used_it():
    asked = "the orders db primary is down, how do we fail over to the replica?"
    assert used("From our notes: " + FAILOVER, asked, SHOWN) == ["failover"]


def test_a_reply_that_follows_the_runbook_in_its_own_words_used_it():
    asked = "the events consumer is hours behind, what's our procedure?"
    reply = ("Check the partition skew with kcat first; then scale the consumer deployment to 12 replicas, one per "
             "partition. Do not reset offsets unless we have a backfill plan.")
    assert used(reply, asked, SHOWN) == ["kafka"]


def test_a_reply_on_the_same_topic_that_does_not_draw_on_the_memory_used_nothing():
    asked = "the events consumer is hours behind, what's our procedure?"
    reply = ("I will look at the consumer first. Let me read the logs of the events service and see whether the "
             "database or the network is slow, then I will tell you what I find.")
    assert used(reply, asked, SHOWN) == []


def test_words_the_user_asked_with_are_no_sign_of_a_memory():
    """The reply repeats the question's words, which the memory holds too: not a use."""
    asked = "should we repoint PgBouncer and promote the Patroni replica for the orders database?"
    reply = "Yes: repoint PgBouncer and promote the Patroni replica for the orders database, as you say."
    assert used(reply, asked, SHOWN) == []


def test_shared_words_without_a_shared_phrase_are_not_a_use():
    """A long reply holding many of a note's words, scattered, never a run of them."""
    reply = ("Plans: days of work on the warehouse, then raw notes. Aggregates later. Events forever? No: "
             "kept for the daily standup, 400 lines at most.")
    assert used(reply, "what should I do this week?", SHOWN) == []


def test_a_stock_phrase_alone_is_not_a_use():
    """A run of common words the memory holds too, and little else of it."""
    reply = "The backlog is zero first thing in the morning; then we announce in the channel what changed."
    assert used(reply, "anything new?", {"failover": FAILOVER}) == []



def test_a_long_note_needs_a_part_of_it_not_a_quarter_of_every_word():
    assert needed(4) == 3 and needed(20) == 5 and needed(400) == 8
    note = FAILOVER + " " + " ".join(f"Appendix item {n}: unrelated detail number {n} about widgets." for n in range(60))
    reply = "Promote the Patroni replica with `patronictl failover orders` and repoint PgBouncer afterwards."
    assert used(reply, "db is down", {"long": note}) == ["long"]


def test_chinese_replies_are_read_by_characters():
    note = "alpha 的测试环境已迁移到北京区域，数据库每周日同步一次。"
    reply = "根据记录，测试环境已迁移到北京区域，数据库每周日同步一次，所以今天的数据是上周日的。"
    assert used(reply, "测试数据为什么这么旧？", {"zh": note}) == ["zh"]
    assert used("我去看一下日志，稍后告诉你结果。", "测试数据为什么这么旧？", {"zh": note}) == []


def test_empty_and_tiny_replies_use_nothing():
    assert used("", "x", SHOWN) == [] and used("OK, done.", "x", SHOWN) == []
    assert used(FAILOVER, "", {}) == []


def test_a_long_reply_that_follows_the_runbook_in_one_paragraph_used_it():
    """A long answer (a review of the repository's safety notes, then the failover): it shares some
    phrases with any note by chance, so it must repeat more of them; this one does."""
    from pathlib import Path

    bulk = " ".join((Path(__file__).resolve().parents[2] / "docs" / "safety.md").read_text().split()[:1200])
    reply = (bulk + "\n\nFor the database: check replication lag is zero first, then run `patronictl failover "
             "orders`, repoint PgBouncer and announce in #incidents.")
    assert used(reply, "review the safety notes, then tell me how to fail over the db", SHOWN) == ["failover"]
    assert used(bulk, "review the safety notes", SHOWN) == []


def test_two_runbooks_from_one_template_the_one_followed_counts():
    """A second review: a phrase both shown runbooks hold used to be ignored, so following one of them
    counted nothing."""
    prod = ("Deploy to production: run `make release ENV=prod`, wait for the canary in eu-west-1 to stay green "
            "for 30 minutes, then promote it with `argocd app sync shop-prod`.")
    staging = ("Deploy to staging: run `make release ENV=staging`, wait for the canary in eu-west-1 to stay green "
               "for 5 minutes, then promote it with `argocd app sync shop-staging`.")
    reply = ("I ran make release ENV=prod; the canary in eu-west-1 stayed green for 30 minutes, so I promoted it "
             "with argocd app sync shop-prod.")
    assert "prod" in used(reply, "ship it to prod", {"prod": prod, "staging": staging})


def test_a_chinese_reply_on_another_subject_shares_words_not_a_note():
    note = "发布流程：先在测试环境验证，配置文件改动要双人复核，日志文件保留三十天，周四下午不发布。"
    reply = ("这个改动我看了一下，如果有问题，日志里应该有请求ID，因为排查时需要它。配置文件的格式没变，"
             "合并前请在本地验证一下，测试环境的数据库也要同步。")
    assert used(reply, "帮我看看这个PR", {"release": note}) == []


def test_a_reply_counts_only_what_was_shown_by_its_moment():
    from datetime import datetime, timezone

    def at(text):
        return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)

    memories = {"a": "A", "b": "B", "c": "C"}
    since = {"a": at("2026-05-01T09:00:00"), "b": at("2026-05-01T10:00:00")}  # c: shown, moment not kept
    assert set(reply_use.shown_by(memories, since, at("2026-05-01T09:30:00"))) == {"a", "c"}
    assert set(reply_use.shown_by(memories, since, at("2026-05-01T09:59:30"))) == {"a", "b", "c"}  # the slack
    assert reply_use.shown_by(memories, since, None) == memories
    # a reply dated at the end of time is judged as one without a moment (a third attack: the session's
    # every use was dropped)
    assert reply_use.shown_by(memories, since, datetime.max.replace(tzinfo=timezone.utc)) == memories
