"""Issue 39, item 13: `mem list` names what it cannot list, `mem sync` counts only removals as
removed, `mem restore` keeps `updated`, the warm service's index upkeep waits for the tree lock
(its LanceDB commits raced other writers and filled service.log with tracebacks), an identifier
alone finds the note holding it, and a title's RLO and zero-width characters are shown escaped."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from memstrata import Memory

PY = sys.executable


def cli(root, *args, **env):
    return subprocess.run([PY, "-m", "memstrata.cli.app", *args, "--root", str(root)], capture_output=True,
                          text=True, env={**os.environ, "MEMSTRATA_SERVICE": "off", **env}, timeout=300)


def test_list_names_a_file_it_cannot_read(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.write("A fine note about the release train.", title="Release train", category="ops")
    (m.root / "ops" / "broken.md").write_text("---\ntitle: [never closed\n---\nThe body.\n")
    shown = cli(m.root, "list")
    assert shown.returncode == 0 and "Release train" in shown.stdout
    assert "ops/broken.md" in shown.stderr and "not listed" in shown.stderr, shown.stderr
    data = json.loads(cli(m.root, "list", "--json").stdout)
    assert data["count"] == 1 and list(data["unreadable"]) == ["ops/broken.md"]
    assert "unreadable" not in json.loads(cli(m.root, "list", "--json", "--category", "general").stdout)


def test_sync_does_not_count_files_given_an_id_as_removed(tmp_path, embedder):
    """Hand-made files a recall indexed by their path get their id at `mem sync`: their rows are
    re-keyed, nothing is removed (it said "2 removed")."""
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.write("Kafka keeps seven days of events.", title="Kafka retention", category="ops")
    (m.root / "ops" / "hand1.md").write_text("---\ntitle: Redis cache\n---\nSessions live in Redis for an hour.\n")
    (m.root / "ops" / "hand2.md").write_text("Nginx terminates TLS for the public site.\n")
    assert m.recall("redis sessions", count_access=False).results  # indexed by path, no id written
    done = cli(m.root, "sync", "--json")
    result = json.loads(done.stdout)
    assert result["removed"] == 0, result
    (m.root / "ops" / "hand2.md").unlink()
    assert json.loads(cli(m.root, "sync", "--json").stdout)["removed"] == 1  # a real removal still counts


def test_restore_keeps_updated(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-10-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    r = m.write("The office closes at six on Fridays.", title="Office hours", category="general")
    written = m.read(r.id, count_access=False).updated
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-20T09:00:00Z")
    m.delete(r.id)
    back = m.restore(r.id)
    assert back.updated == written
    again = m.read(r.id, count_access=False)
    assert again.updated == written and again.status == "active" and again.tier == "hot"


HOLD = """
import sys, time
from pathlib import Path
from memstrata.storage.lock import TreeLock
with TreeLock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_service_index_upkeep_waits_for_the_tree_lock_and_logs_nothing(tmp_path, embedder, capfd):
    """The service's index upkeep ran LanceDB's compaction without the tree lock: a writer of another
    process raced it ("Retryable commit conflict") and each race left a traceback in service.log.
    Now it takes the lock without waiting; a held lock (or a lost race) means "later", said nowhere."""
    from memstrata.service import upkeep

    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    for n in range(3):
        m.write(f"Note {n}: the cache warms up in {n + 2} minutes.", title=f"Cache {n}", category="ops")
    index = m.state.vector_index()
    before = int(index.table().version)
    holder = subprocess.Popen([PY, "-c", HOLD, str(m.root), "30"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        capfd.readouterr()
        assert upkeep.maintain_index(str(m.root)) is upkeep.BUSY
        index.refresh()
        assert int(index.table().version) == before  # nothing written while another process held the tree
        assert capfd.readouterr().err == ""
        jobs = upkeep.Upkeep()
        jobs.after_write(str(m.root))
        jobs._maintain_due[str(m.root)] = 0.0
        jobs.run_due_maintenance()
        assert str(m.root) in jobs._maintain_due  # tried again later
    finally:
        holder.kill()
        holder.wait()
    done = upkeep.maintain_index(str(m.root))
    assert done is not upkeep.BUSY and done["actions"]  # the scalar indexes, once the tree is free


def test_service_index_upkeep_leaves_the_written_table_loaded_for_the_next_call(tmp_path, embedder):
    """After a write the next recall loaded the new table version's frame, texts and statistics
    itself (about 4 s at 300,000 captured turns, 19 s before the feedback statistics were carried):
    the upkeep between calls does it now, on the instance the next call gets."""
    from memstrata.service import upkeep
    from memstrata.service.pool import POOL
    from memstrata.service.threads import call_local

    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    for n in range(3):
        m.write(f"Note {n}: the cache warms up in {n + 2} minutes.", title=f"Cache {n}", category="ops")
    root = str(m.root)
    try:
        assert upkeep.maintain_index(root) is not upkeep.BUSY
        call_local.memories = {}
        pooled = POOL.checkout(root, touch=False)
        index = pooled.state.vector_index()
        frame = index._frame
        assert frame is not None and frame.version == int(index.table().version)
        assert frame._texts is not None and frame._stats is not None  # nothing left for the next recall to load
    finally:
        POOL.checkin_all()
        POOL.close(root)


_WORDS = ("科技 周刊 发布 软件 开发 工具 网站 文章 图片 资源 模型 手机 芯片 工厂 工人 城市 交通 能源 电池 汽车 "
          "数据 服务器 云计算 程序员 开源 项目 浏览器 搜索 广告 公司 市场 价格 用户 隐私 安全 网络 游戏 视频 音乐 "
          "教育 学校 学生 研究 论文 科学家 太空 火箭 卫星 气候").split()


def test_an_identifier_alone_finds_the_one_note_holding_it(tmp_path, embedder):
    """`mem recall "zq0007x"` said "nothing relevant" on a newsletter archive while one issue held it:
    the model cannot read an identifier, and a long note's cosine to it (beside notes holding a
    look-alike, `zq0007y`) put the holder under the cut-off. A note holding the whole identifier is
    now judged by the words-only model, as grep's hits are."""
    import random

    from memstrata.scoring.relevance import words_only

    rng = random.Random(7)

    def para(n):
        return "".join("".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 16))) + "。" for _ in range(n))

    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    rows = tmp_path / "rows.jsonl"
    with rows.open("w") as out:
        for i in range(16):
            body = "\n\n".join(para(6) for _ in range(8))
            if i % 5 == 0:
                body = body.replace("\n\n", "\n\n构建 zq0007y\n\n", 1)
            if i == 3:
                body = body.replace("。", "，内部构建编号 zq0007x 随之发布。", 1)
            out.write(json.dumps({"title": f"Weekly report {i}", "body": body, "category": "reports"},
                                 ensure_ascii=False) + "\n")
    m.import_jsonl(rows)
    found = m.recall("zq0007x", count_access=False)
    assert found.results and found.results[0].title == "Weekly report 3", (found.best_relevance, found.notes)
    assert found.results[0].relevance >= words_only(1.0)
    # the look-alikes stay weak: about the cut-off (0.01), far below the holder (the relevance models refitted
    # with the Chinese corpora, issue 40, put them at 0.0104)
    assert all(h.relevance < 0.02 for h in found.results[1:]), [(h.title, h.relevance) for h in found.results]
    from memstrata.retrieval.search import is_identifier
    assert [is_identifier(q) for q in ("zq0007x", "ERR-4012", "v2.13.0", "release", "zq 0007", "42")] == \
        [True, True, True, False, False, False]


def test_titles_show_bidi_and_zero_width_characters_escaped(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    rlo = m.write("The invoice for the deploy tooling arrived.", title="Invoice \u202egnp.exe", category="ops")
    m.write("Log in to the payment portal monthly.", title="pay\u200bpal login", category="ops")
    listing = cli(m.root, "list").stdout
    assert "\u202e" not in listing and "\u200b" not in listing
    assert "\\u202egnp.exe" in listing.replace("\n", "").replace(" ", "") or "\\u202e" in listing
    assert "\\u200b" in listing
    hit = cli(m.root, "recall", "invoice for the deploy tooling", "--no-touch").stdout
    assert "\u202e" not in hit and "Invoice \\u202egnp.exe" in hit
    read = cli(m.root, "read", rlo.id, "--no-touch").stdout
    assert "\u202e" not in read and "\\u202e" in read
    data = json.loads(cli(m.root, "read", rlo.id, "--no-touch", "--json").stdout)
    assert data["title"] == "Invoice \u202egnp.exe"  # data for agents stays as stored
