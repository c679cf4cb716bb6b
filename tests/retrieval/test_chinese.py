"""Chinese as a first language (issue 40), on an adopted folder of Chinese notes, the real model and LanceDB:
ranking by what reads Chinese, mixed questions weighed by idf, no vectors of text the model cannot
read, small talk answered with nothing, notes titled by their H1, snippets that are passages."""
from __future__ import annotations

import pytest

from memstrata import Memory

BOILERPLATE = "这里记录每周值得分享的内容，每周五发布。"

NOTES = {
    "ops/alpha-prod.md": "# alpha 线上环境\n\nalpha 项目的生产环境部署在华东二区（上海），数据库和缓存都在同一个可用区；"
                         "预发环境放在华北二区，每周四晚上发布。\n",
    "alpha/weekly-sync.md": "# alpha 周会纪要\n\n本周 alpha 讨论了需求排期和接口评审，alpha 的前端页面还在开发，"
                            "下周继续跟进 alpha 的测试用例。\n",
    "alpha/release.md": "# Alpha release checklist\n\nBefore the alpha release: tag the alpha build, update the alpha "
                        "changelog and tell QA which alpha features changed.\n",
    "alpha/roadmap.md": "# Alpha roadmap\n\nAlpha milestones: alpha one in March, alpha two in May. The alpha team owns "
                        "the alpha API and the alpha dashboard.\n",
    "alpha/contacts.md": "# Who to ask about alpha\n\nFor alpha questions ask Lin; for the alpha region settings and the "
                         "alpha deploy scripts ask Wei.\n",
    "alpha/naming.md": "# alpha 名字的由来\n\nalpha 这个名字是团队投票选出来的，alpha 代表第一个版本，大家觉得 alpha 好记。\n",
    "redis/persistence.md": "# Redis 持久化\n\n## RDB\n\nRDB 会定期把内存里的数据做成快照写到磁盘上，恢复快，但两次快照之间的"
                            "写入可能丢失。\n\n## AOF\n\nAOF 把每一条写命令以 append-only 的方式追加到日志文件里，重启时回放日志"
                            "重建数据，数据更完整，文件也更大。\n",
    "redis/sentinel.md": "# Redis 哨兵\n\n哨兵负责监控主节点，主节点宕机以后，哨兵们投票选出一个从节点升级为新的主节点，"
                         "再通知客户端切换地址。\n",
    "mq/duplicate.md": "# 消息重复消费\n\n消费者处理完消息还没来得及提交位移就重启了，同一条消息会被再消费一次，"
                       "所以业务上要做幂等，比如用唯一键去重。\n",
    "db/sharding.md": "# 分库分表\n\n单表数据太多时按用户编号取模拆到多个库多个表里，拆分以后主键不能再用自增，"
                      "要用雪花算法之类的全局编号。\n",
    "life/coffee.md": "# 咖啡豆\n\n家里的咖啡豆放在冰箱里会吸潮，最好密封后放在阴凉的柜子里，两周内喝完。\n",
    "life/plants.md": "# 阳台的植物\n\n绿萝喜阴，浇水要见干见湿，冬天少浇；多肉植物要多晒太阳。\n",
    "setup/install.md": "```bash\n# 先装依赖\npip install -r requirements.txt\n```\n\n# 安装指南\n\n按上面的命令装好依赖，"
                        "再运行初始化脚本。\n",
    "setup/titled.md": "---\ntitle: 自己起的标题\n---\n\n# 正文里的一级标题\n\n这篇笔记在前言里写了标题。\n",
    "setup/no-heading.md": "这篇笔记没有标题行，只有一段话，讲的是怎么配置开发环境的代理。\n",
    "weekly/issue-1.md": f"# 周刊（第 1 期）：旧手机\n\n{BOILERPLATE}\n\n## 新闻\n\n1、[蚊子喜欢咬谁？](https://example.com/mosquito)\n\n"
                         "![](https://example.com/mosquito.jpg)\n\n研究发现，呼出二氧化碳越多的人，越容易被蚊子叮咬。\n",
    "weekly/issue-2.md": f"# 周刊（第 2 期）：电动车\n\n{BOILERPLATE}\n\n## 新闻\n\n1、[电池回收](https://example.com/battery)\n\n"
                         "废旧电池里的锂可以提炼出来重新做成新电池，回收率已经超过九成。\n",
    "weekly/issue-3.md": f"# 周刊（第 3 期）：远程办公\n\n{BOILERPLATE}\n\n## 文章\n\n1、[在家工作](https://example.com/remote)\n\n"
                         "远程办公最难的是沟通，作者建议每天固定一个时间开短会。\n",
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("zh") / "notes"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    m = Memory(root, embedder=embedder)
    m.init(adopt=True)
    return m


def _first(m, query, **kw):
    hits = m.recall(query, k=5, min_relevance=0, **kw).results
    return hits[0] if hits else None


def test_a_mixed_question_is_decided_by_its_rare_words_not_its_one_english_word(tree):
    # "alpha" is in five notes: its idf is low; the Chinese words 生产环境 部署 区域 are in one
    hit = _first(tree, "帮我看看 alpha 生产环境现在部署在哪个区域")
    assert hit.path == "ops/alpha-prod.md"
    assert _first(tree, "Redis 挂了以后重启，数据是怎么恢复的").path == "redis/persistence.md"
    assert _first(tree, "Redis 主节点宕机以后谁来选新的主节点").path == "redis/sentinel.md"


def test_an_english_question_finds_a_chinese_note_by_its_english_words(tree):
    assert _first(tree, "Redis RDB snapshot versus AOF log").path == "redis/persistence.md"


def test_small_talk_and_off_topic_questions_bring_nothing_on_a_chinese_tree(tree):
    for prompt in ("谢谢", "你好", "好的，继续", "法国的首都是哪里？", "帮我写一个快速排序", "今天晚饭吃什么好"):
        assert tree.recall(prompt, k=5).results == [], prompt
    # while a real question keeps its answer at the default cut-off
    assert [h.path for h in tree.recall("消息被重复消费了怎么办", k=5).results][:1] == ["mq/duplicate.md"]


def test_chinese_chunks_get_no_vectors_of_their_own_and_the_doctor_is_healthy(tree, embedder):
    from memstrata.retrieval import readable

    rows = tree.state.vector_index().table().search().select(["id", "chunk", "kind", "text"]).limit(None) \
        .to_arrow().to_pylist()
    by_path = {e.path: e.id for e in tree.list()}
    kinds = {}
    for r in rows:
        kinds.setdefault(r["id"], []).append(r["kind"])
    # a note of Chinese only: one row, whose stand-in vector recall never counts
    assert kinds[by_path["life/coffee.md"]] == [readable.BLANK]
    # a Chinese note with English words: its rows are embedded as their Latin part (no blank row)
    assert readable.BLANK not in kinds[by_path["redis/persistence.md"]]
    explained = tree.recall("咖啡豆怎么保存", k=3, min_relevance=0, explain=True).results
    coffee = next(h for h in explained if h.path == "life/coffee.md")
    assert coffee.signals["vector_similarity"] is None and explained[0].path == "life/coffee.md"
    report = tree.doctor()
    assert not [f for f in report.findings if f.kind.startswith("vectors") or f.kind == "model_mismatch"]
    assert tree.sync()["embedded"] == 0


def test_a_model_that_reads_chinese_embeds_every_chunk(embedder):
    from memstrata.models.locate import reads_cjk
    from memstrata.retrieval.table_rows import entry_chunks
    from memstrata.storage.config import Settings
    from memstrata.storage.entry import Entry

    class Multilingual:  # the bundled model's vectors under a multilingual model's name
        name = "paraphrase-multilingual-MiniLM-L12-v2"
        max_tokens, count_tokens = embedder.max_tokens, staticmethod(embedder.count_tokens)

        @property
        def reads_cjk(self):
            return reads_cjk(self.name)

    body = NOTES["life/coffee.md"] + "\n## 磨豆\n\n" + "手冲用中细研磨，意式要磨得更细，磨好的粉十五分钟内用完。" * 12
    note = Entry(id="", title="咖啡豆", body=body)
    assert not embedder.reads_cjk and Multilingual().reads_cjk and reads_cjk("/tmp")
    english_only = entry_chunks(note, embedder, Settings())
    assert [c.kind for c in english_only] == ["blank"]  # nothing it can read: one row, a stand-in vector
    multilingual = entry_chunks(note, Multilingual(), Settings())
    kinds = [c.kind for c in multilingual]
    assert kinds[0] == "entry" and kinds[1:] == ["section"] * (len(kinds) - 2) + ["about"] and len(kinds) > 3
    assert all(c.embed is None or "咖啡" in c.embed for c in multilingual[1:])


def test_a_note_without_a_title_takes_its_first_h1_and_its_bytes_stay(tree):
    titles = {e.path: e.title for e in tree.list()}
    assert titles["redis/persistence.md"] == "Redis 持久化"
    assert titles["setup/install.md"] == "安装指南"  # a `# comment` inside a code fence is no heading
    assert titles["setup/titled.md"] == "自己起的标题"  # `title:` wins
    assert titles["setup/no-heading.md"] == "no-heading"  # no H1: the file name
    text = (tree.root / "redis/persistence.md").read_text(encoding="utf-8")
    assert text.endswith(NOTES["redis/persistence.md"]) and "title:" not in text  # only the id line was added
    hit = _first(tree, "哨兵怎么选主节点")
    assert hit.title == "Redis 哨兵"


def test_snippets_are_passages_never_links_images_or_boilerplate(tree):
    hit = _first(tree, "为什么有的人特别招蚊子")
    assert hit.path == "weekly/issue-1.md" and hit.snippet.startswith("研究发现"), hit.snippet
    for query in ("电池里的锂能回收吗", "远程办公怎么沟通"):
        snippet = _first(tree, query).snippet
        assert BOILERPLATE not in snippet and "](" not in snippet and not snippet.startswith("!["), snippet
    # a hit that holds none of the words (found by its English name): still not the shared opening line
    snippet = _first(tree, "weekly issue 2 electric cars", category="weekly").snippet
    assert BOILERPLATE not in snippet, snippet
