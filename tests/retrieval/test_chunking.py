"""What an entry is embedded as: its chunks, the context chunk, and each distinct text embedded once."""
from __future__ import annotations

import numpy as np
import pytest

from memstrata.retrieval import chunking
from memstrata.retrieval.embed_batch import embed_distinct


def _chunks(embedder, title, body):
    return chunking.chunk_entry(title, body, embedder.count_tokens, embedder.max_tokens, 32, 48)


def test_a_one_sentence_body_is_the_entry(embedder):
    # with a title in front, the sentence alone used to be embedded a second time
    one = _chunks(embedder, "Billing database", "We picked Postgres for the billing service.")
    assert [c.kind for c in one] == ["entry"]
    assert one[0].text == "Billing database\nWe picked Postgres for the billing service."
    several = _chunks(embedder, "Billing database", "We picked Postgres for billing. MySQL lost on replication.")
    assert [c.kind for c in several] == ["entry", "sentence", "sentence"]
    # a short fragment beside the one sentence keeps it as a chunk of its own: it is not the whole body
    assert [c.kind for c in _chunks(embedder, "", "Hi! We picked Postgres for billing.")] == ["entry", "sentence"]


def test_context_chunk_carries_the_end_of_the_entry_before():
    before = "word " * 100 + "the end of the entry before"
    text = chunking.context_text(before, "This entry.")
    head, tail = text.split("\n")
    assert tail == "This entry." and head.startswith("…") and head.endswith("the end of the entry before")
    assert len(head) == 201


class _Counting:
    """The real embedder, counting the texts it is given."""

    def __init__(self, embedder):
        self.inner = embedder
        self.seen: list[str] = []

    def embed(self, texts, progress=None):
        self.seen.extend(texts)
        return self.inner.embed(texts, progress=progress)


def test_each_distinct_text_is_embedded_once(embedder):
    texts = ["We picked Postgres.", "Thanks!", "We picked Postgres.", "Thanks!", "Something else entirely."]
    counting = _Counting(embedder)
    vectors = embed_distinct(counting, texts)
    assert sorted(counting.seen) == sorted(set(texts))
    assert vectors.shape == (5, embedder.dim)
    np.testing.assert_allclose(vectors[0], vectors[2])
    np.testing.assert_allclose(vectors, embedder.embed(texts), atol=1e-6)
    assert len(embed_distinct(counting, [])) == 0


_ZH = ("第一版计费系统每分钟只能处理大约三百个请求，高峰期经常变慢。经过几轮评审，杭州的团队决定把计费系统拆成几个更小的模块重新编写。"
       "王芳把每一次故障都记在笔记本里，最严重的一次持续了四十分钟。成都的用户反映，每次更新之后计费系统都会丢失他们的个人设置。"
       "那年的预算给计费系统拨了八十万元，并且增加了两名工程师。王芳坚持周五不上线的规矩，后来这条规矩在公司里沿用了好几年。"
       "一家来自厦门的供应商报价更低，但合同里藏着每年都要支付的维护费。到了那一年，计费系统大部分查询都能在五十毫秒之内返回结果。"
       "上线前的压测显示，计费系统在两千个并发用户下依然保持稳定。有一次证书过期，王芳在凌晨三点被电话叫醒，花了半个小时才修好。")


def test_a_long_chinese_entry_is_its_sentences(embedder):
    """A long CJK entry whose sentences are all chunks gets no windows, and its whole-entry
    vector is the mean of its sentence vectors; a long English entry keeps its windows."""
    assert embedder.count_tokens(_ZH) > embedder.max_tokens
    chunks = _chunks(embedder, "计费系统笔记", _ZH)
    assert [c.kind for c in chunks] == ["entry"] + ["sentence"] * 10
    assert chunks[0].pooled and not any(c.pooled for c in chunks[1:])
    english = " ".join(f"Sentence number {i} says the billing service needed {i} more servers." for i in range(40))
    kinds = [c.kind for c in _chunks(embedder, "Billing", english)]
    assert "window" in kinds and not _chunks(embedder, "Billing", english)[0].pooled


class _ReadsChinese:
    """The bundled model as a configured model that reads Chinese (a multilingual one) is used: its
    vectors, and every chunk of a Chinese entry embedded (retrieval/readable.py)."""

    reads_cjk = True

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_a_pooled_whole_entry_vector_is_the_mean_of_its_sentences(mem):
    from memstrata.retrieval.table_rows import rows_for
    from memstrata.storage.entry import Entry

    index = mem.state.vector_index()
    entry = Entry(id="zh1", title="计费系统笔记", body=_ZH, category="notes")
    assert [r["kind"] for r in rows_for(index, [entry], mem.embedder)] == ["blank"]  # the bundled model: English only
    rows = rows_for(index, [entry], _ReadsChinese(mem.embedder))
    sentences = np.array([r["vector"] for r in rows if r["kind"] == "sentence"])
    mean = sentences.mean(axis=0)
    np.testing.assert_allclose(rows[0]["vector"], mean / np.linalg.norm(mean), atol=1e-6)
    assert [r["kind"] for r in rows][:2] == ["entry", "sentence"]
    np.testing.assert_allclose(sentences[0], mem.embedder.embed([rows[1]["text"]])[0], atol=1e-5)


def test_only_entries_of_enough_words_get_sentence_chunks(embedder):
    def kinds(body, min_words):
        return [c.kind for c in chunking.chunk_entry("", body, embedder.count_tokens, embedder.max_tokens, 32, 48,
                                                     min_words)]

    short = "We picked Postgres for billing. MySQL lost on replication."  # 9 words
    assert kinds(short, 0) == ["entry", "sentence", "sentence"]
    assert kinds(short, 15) == ["entry"]
    assert kinds(short, 9) == ["entry", "sentence", "sentence"]
    chinese = "我们为账单服务选择了数据库。另一个数据库在复制上输了。"  # no spaces: its words are not counted
    assert kinds(chinese, 15) == ["entry", "sentence", "sentence"]


def test_sentence_min_words_is_a_setting(mem):
    from memstrata.storage.config import Settings

    assert Settings().chunk_sentence_min_words == 15
    mem.write("We picked Postgres for billing. MySQL lost on replication.", title="DB", category="work")

    def kinds():
        table = mem._recall.state.vector_index().table()
        return table.search().select(["kind"]).limit(None).to_arrow().column("kind").to_pylist()

    assert kinds() == ["entry"]
    mem.config_set("chunk_sentence_min_words", "0")
    mem.write("We deploy with Argo CD. Releases go out every Tuesday.", title="Deploy", category="work")
    assert kinds().count("sentence") == 2


_SYNTAX = """# Basic formatting syntax

Learn how to apply basic formatting and styling to your notes.

## Paragraphs

To create paragraphs, use a blank line to separate one or more lines of text. """ + "Plain prose goes here. " * 40 + """

## Headings

To create a heading, add up to six `#` symbols before your heading text.

```md
# This is a heading 1
## This is a heading 2
```

## Tables

You can create tables using vertical bars (|) to separate columns and hyphens (-) to define headers.

| First name | Last name |
| ---------- | --------- |
| Max        | Planck    |

### Format content within a table

Use a backslash to escape a vertical bar inside a table cell.
"""


def test_a_long_note_is_indexed_by_its_heading_sections(embedder):
    chunks = _chunks(embedder, "Basic formatting syntax", _SYNTAX)
    # its sections, then one `about` chunk (title and opening: the ranker's `about` feature, issue 40)
    assert chunks[0].kind == "entry" and [c.kind for c in chunks[1:]] == ["section"] * (len(chunks) - 2) + ["about"]
    assert "Basic formatting syntax" in chunks[-1].text.split(" Learn", 1)[0]
    chunks = chunks[:-1]
    heads = [c.text.split("\n", 1)[0] for c in chunks[1:]]
    # the title and the heading path lead each section; the H1 that repeats the title is not doubled
    assert "Basic formatting syntax > Tables" in heads
    assert "Basic formatting syntax > Tables > Format content within a table" in heads
    assert all(not h.startswith("Basic formatting syntax > Basic formatting syntax") for h in heads)
    # a `#` line inside a code fence is code, not a heading
    assert not any("This is a heading 1" in h for h in heads)
    assert any("# This is a heading 1" in c.text for c in chunks[1:])
    # a short note of one section is its entry; one run of text keeps its sentences
    assert [c.kind for c in _chunks(embedder, "Tables", "## Tables\n\nUse bars.\n\nAnd hyphens.")] == ["entry"]
    assert "section" not in [c.kind for c in _chunks(embedder, "", "We use bars. We use hyphens for headers.")]


def test_a_table_question_reaches_the_tables_section_of_a_long_note(tmp_path, embedder):
    from memstrata import Memory

    vault = tmp_path / "vault"
    (vault / "help").mkdir(parents=True)
    (vault / "help" / "Basic formatting syntax.md").write_text(_SYNTAX)
    for name, text in [("Sync", "Sync your notes between devices with the sync service. " * 30),
                       ("Plugins", "Community plugins extend the app; turn on restricted mode off first. " * 30)]:
        (vault / "help" / f"{name}.md").write_text(f"# {name}\n\n{text}\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    rows = m._recall.state.vector_index().table().search().select(["path", "kind", "text"]).limit(None).to_arrow()
    texts = [t for p, k, t in zip(*(rows.column(c).to_pylist() for c in ("path", "kind", "text")))
             if k == "section" and p.endswith("syntax.md")]
    best = max(texts, key=lambda t: float(embedder.embed_query("how do I make a table") @ embedder.embed([t])[0]))
    assert best.startswith("Basic formatting syntax > Tables")
    assert m.recall("how do I make a table", min_relevance=0).results[0].path == "help/Basic formatting syntax.md"


def test_the_heading_feature_reads_the_best_section_heading_of_a_note(tmp_path, ranker_feature):
    # the ranker's `head`: the idf share of the query's words in one heading path of a note's
    # sections (title left out); 0 for a note without sections
    vault = tmp_path / "vault"
    (vault / "help").mkdir(parents=True)
    (vault / "help" / "Basic formatting syntax.md").write_text(_SYNTAX)
    (vault / "help" / "Sync.md").write_text("# Sync\n\n" + "Sync your tables between devices with the sync service. " * 30)
    head = ranker_feature(vault, "format content tables", "head")
    # "Tables > Format content within a table" holds every word of the query; Sync has no sections
    assert head["help/Basic formatting syntax.md"] == pytest.approx(1.0) and head["help/Sync.md"] == 0.0


def _runs_word_by_word(words, sep, count_tokens, room):
    """The cut as it was made before: the growing join counted after every word."""
    out, part = [], []
    for w in words:
        part.append(w)
        if count_tokens(sep.join(part)) > room:
            part.pop()
            if part:
                out.append(sep.join(part))
            part = [w]
    if part:
        out.append(sep.join(part))
    return out


def test_long_sentences_are_cut_where_counting_word_by_word_cuts_them(embedder):
    import random

    rng = random.Random(24)
    vocab = ("the a memory engine unaffable tokenisation x ab abc recall, notes. 2026-12-02 "
             "https://example.com/a/b?c=d 数据库 发布 星期五 松鸦属于什么科目 Vue 组件 "
             "supercalifragilisticexpialidocious naïve café ÀÉÎ").split()
    for trial in range(60):
        words = [rng.choice(vocab) for _ in range(rng.randint(1, 400))]
        if trial % 5 == 0:
            words.append("z" * rng.randint(50, 400))  # one word longer than any room
        sep = "" if trial % 4 == 0 else " "
        room = rng.choice([8, 16, 40, 120, 254])
        items = list(sep.join(words)) if not sep else words
        runs = chunking._runs(items, sep, embedder.count_tokens, room)
        if sep:  # words add their tokens up: the very cuts of the word-by-word count
            assert runs == _runs_word_by_word(items, sep, embedder.count_tokens, room), (trial, room)
        else:  # letters with no space merge into fewer tokens as a run grows: every run fits and is maximal
            assert "".join(runs) == "".join(items)
            at = 0
            for run in runs:
                at += len(run)
                assert len(run) == 1 or embedder.count_tokens(run) <= room, (trial, room, run)
                assert at == len(items) or embedder.count_tokens(run + items[at]) > room, (trial, room, run)


def test_a_pasted_image_is_not_embedded_as_text(embedder):
    import base64
    import random

    blob = base64.b64encode(random.Random(7).randbytes(60_000)).decode()
    body = ("# Deploys\n\nWe deploy with a blue-green switch behind the load balancer.\n\n"
            f"![screenshot](data:image/png;base64,{blob})\n\n## Rollback\n\nFlip the switch back within five minutes.")
    chunks = _chunks(embedder, "Deploy notes", body)
    assert len(chunks) <= 4
    assert all(len(c.text) < 1000 for c in chunks)
    assert any("blue-green" in c.text for c in chunks) and any("Flip the switch" in c.text for c in chunks)
    assert chunking.content_hash("Deploy notes", body) != chunking.content_hash("Deploy notes", "")


def test_a_pasted_image_is_never_a_snippet_nor_injected():
    from memstrata.retrieval.hits import best_sentence
    from memstrata.retrieval.prompts import relevant_part

    blob = "iVBORw0KGgoAAAANSUhEUgAA" * 40
    body = f"Kafka is fast because it appends to a log.\n\n![diagram](data:image/png;base64,{blob})\n"
    assert blob[:40] not in best_sentence(body, ["kafka"]) and blob[:40] not in best_sentence(body, ["diagram"])
    assert blob[:40] not in relevant_part(body, "why is kafka fast?")
    assert "appends to a log" in relevant_part(body, "why is kafka fast?")


def test_a_notes_chunk_0_keeps_the_note_and_is_embedded_as_its_head(embedder):
    # chunk 0 of a note chunked by sections was its first 256 tokens again (29% of an adopt's
    # tokens, a repeat of its first sections): it is now embedded as the note's head
    # (chunking.note_head); the row still stores the whole note (hash, full text, snippets)
    chunks = _chunks(embedder, "Basic formatting syntax", _SYNTAX)
    first = chunks[0]
    assert first.text == chunking.entry_text("Basic formatting syntax", _SYNTAX)
    assert first.embedded != first.text
    if chunking.HEAD_MODE == "section":
        assert first.embedded == chunks[1].text  # one text: embedded once (embed_distinct)
    else:
        assert embedder.count_tokens(first.embedded) <= chunking.HEAD_TOKENS
        assert first.embedded.startswith("Basic formatting syntax")
    # an entry that is one run of text (a chat turn, a short note) is embedded as itself
    for body in ("We picked Postgres for the billing service. MySQL lost on replication.",
                 "## Tables\n\nUse bars.\n\nAnd hyphens."):
        assert all(c.embed is None for c in _chunks(embedder, "Tables", body))


def test_the_index_row_of_a_notes_chunk_0_holds_the_note_and_its_heads_vector(tmp_path, embedder):
    from memstrata import Memory

    vault = tmp_path / "vault"
    (vault / "help").mkdir(parents=True)
    (vault / "help" / "Basic formatting syntax.md").write_text(_SYNTAX)
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    rows = m._recall.state.vector_index().table().search().where("chunk = 0").limit(None).to_arrow().to_pylist()
    assert len(rows) == 1
    head = _chunks(embedder, "Basic formatting syntax", _SYNTAX)[0]
    assert rows[0]["text"] == head.text  # the whole note: what the doctor and a snapshot check
    assert float(np.dot(rows[0]["vector"], embedder.embed([head.embedded])[0])) > 0.999
    assert float(np.dot(rows[0]["vector"], embedder.embed([head.text])[0])) < 0.99
    assert m.doctor().healthy  # the index agrees with the tree (chunk 0 checked by its text)


def test_chunk_0_of_a_note_that_fits_the_window_shares_its_first_sections_vector(embedder):
    # its outline was 32 tokens more to embed for a note whose sections already hold every word of
    # it (chunking.HEAD_SHORT_MODE); a note past the window keeps its outline
    body = ("# Deploys\n\nWe deploy with a blue-green switch behind the load balancer.\n\n"
            "## Rollback\n\nFlip the switch back within five minutes, then page the on-call engineer.")
    chunks = _chunks(embedder, "Deploy notes", body)
    assert [c.kind for c in chunks] == ["entry", "section", "section", "about"]
    assert chunks[0].text == chunking.entry_text("Deploy notes", body)  # the row keeps the whole note
    assert chunks[0].embedded == chunks[1].embedded  # one text: embedded once (embed_distinct)
    long_note = _chunks(embedder, "Basic formatting syntax", _SYNTAX)
    assert long_note[0].embedded not in {c.embedded for c in long_note[1:] if c.kind == "section"}


def test_a_hit_found_by_what_it_said_before_shows_that_text_as_replaced():
    """A new user's review: "who owns the invoice PDF renderer?" found the meeting note by its v1 and
    showed v2's follow-up, which says nothing of it, as if it answered. The snippet is still the current
    text (a replaced text is shown only by `mem history`), and it says which version matched."""
    from memstrata.retrieval.hits import best_sentence
    from memstrata.storage.versions import EARLIER_VERSION

    text = ("Meeting 1/12\nMeeting 1/12 follow-up: Lena also owns the dunning emails.\n\n"
            f"{EARLIER_VERSION}1 (2026-01-12):\n\nMarek owns the invoice PDF renderer. The billing API is frozen.\n")
    shown = best_sentence(text, ["owns", "invoice", "pdf", "renderer"], "Meeting 1/12")
    assert shown == ("Meeting 1/12 follow-up: Lena also owns the dunning emails. "
                     "[matched earlier version v1 (2026-01-12): mem history]") and "Marek" not in shown
    # the current text holds as many of the terms: it is the snippet, as before
    assert best_sentence(text, ["owns", "dunning"], "Meeting 1/12") == (
        "Meeting 1/12 follow-up: Lena also owns the dunning emails.")
    # a line of the note's own that begins like one is no kept version (a third attack: the label
    # named a version the entry never had, and the answer after it was never shown)
    prose = ("Renderer status notes.\nEarlier version v1.2 of the SDK crashed; the real detail: Alice owns "
             "the PDF renderer now.\n")
    assert best_sentence(prose, ["owns", "pdf", "renderer"], "SDK notes") == (
        "Earlier version v1.2 of the SDK crashed; the real detail: Alice owns the PDF renderer now.")
