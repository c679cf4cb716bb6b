"""Measure LanceDB native FTS tokenizers on Chinese memories: `python tests/retrieval/measure_chinese_fts.py`.

30 short Chinese / mixed memories; queries are (a) every entry's sub-phrases of 2-4
characters drawn at random (what a person remembers of a note) and (b) a few natural
questions. Reports hit@1 and MRR@10 per tokenizer (the column holds the text's CJK runs
only for the ngram variants, the whole text otherwise).
"""
from __future__ import annotations

import os
import random
import re
import shutil
import tempfile
from pathlib import Path

DOCS = [
    "用户喜欢在晚上使用深色模式，因为屏幕太亮会伤眼睛。",
    "项目阿尔法决定使用 Postgres 数据库，因为需要 JSONB 字段。",
    "每周一上午十点开站会，讨论上周的进度和本周计划。",
    "王经理要求所有报销单在月底前提交到财务部。",
    "服务器的备份每天凌晨两点自动运行，保留三十天。",
    "小李对花生过敏，团队聚餐时不要点含花生的菜。",
    "新版本的登录页面加入了双因素认证。",
    "客户反馈移动端的加载速度太慢，需要优化图片压缩。",
    "我们把持续集成从 Jenkins 迁移到了 GitHub Actions。",
    "下个季度的预算增加了百分之十五，主要用于招聘。",
    "公司年会定在十二月二十日，地点是上海国际会议中心。",
    "张老师推荐的机器学习教材是周志华的西瓜书。",
    "猫咪米索喜欢睡在温暖的笔记本键盘上。",
    "周末去杭州西湖骑自行车，天气很好。",
    "搜索功能要支持中文分词，否则短语查询找不到结果。",
    "数据库连接池的最大连接数设置为五十。",
    "产品经理希望首页增加一个推荐商品的轮播图。",
    "这次故障的原因是缓存过期时间设置错误。",
    "日志系统改用结构化日志，方便在 Kibana 里检索。",
    "妈妈的生日是三月八日，要提前订蛋糕。",
    "学习日语的计划：每天背二十个单词，周末做听力练习。",
    "办公室的打印机经常卡纸，已经报修两次了。",
    "代码评审要求每个合并请求至少有两位同事批准。",
    "出差报销需要附上发票原件和行程单。",
    "健身房的会员卡下个月到期，需要续费。",
    "前端框架从 Vue 二升级到 Vue 三，组件写法有变化。",
    "客户合同里约定了百分之九十九点九的可用性。",
    "老王建议把微服务合并，减少运维成本。",
    "晚上十一点以后不要发工作消息给同事。",
    "去北京出差住在朝阳区的酒店，离客户公司很近。",
]
QUESTIONS = [
    ("深色模式", 0), ("数据库", 1), ("站会", 2), ("报销", 3), ("备份", 4), ("过敏", 5), ("双因素认证", 6),
    ("加载速度", 7), ("持续集成", 8), ("预算", 9), ("年会", 10), ("西瓜书", 11), ("笔记本键盘", 12),
    ("西湖", 13), ("中文分词", 14), ("连接池", 15), ("轮播图", 16), ("缓存过期", 17), ("结构化日志", 18),
    ("生日蛋糕", 19), ("日语单词", 20), ("打印机卡纸", 21), ("代码评审", 22), ("发票", 23), ("会员卡", 24),
    ("Vue 升级", 25), ("可用性", 26), ("微服务", 27), ("工作消息", 28), ("朝阳区酒店", 29),
]
_CJK = re.compile(r"[\u4e00-\u9fff]+")


def sub_phrases(seed: int = 7, per_doc: int = 4):
    rng = random.Random(seed)
    out = []
    for n, doc in enumerate(DOCS):
        runs = [r for r in _CJK.findall(doc) if len(r) >= 2]
        for _ in range(per_doc):
            run = rng.choice(runs)
            size = rng.randint(2, min(4, len(run)))
            start = rng.randint(0, len(run) - size)
            out.append((run[start:start + size], n))
    return out


def cjk_only(text: str) -> str:
    return " ".join(_CJK.findall(text))


def main():
    import lancedb
    from lancedb.index import FTS

    import jieba

    home = Path(tempfile.mkdtemp(prefix="lance-lm-"))
    (home / "jieba" / "default").mkdir(parents=True)
    shutil.copy(Path(jieba.__file__).parent / "dict.txt", home / "jieba" / "default" / "dict.txt")
    os.environ["LANCE_LANGUAGE_MODEL_HOME"] = str(home)
    variants = {
        "simple (default)": (FTS(), False),
        "ngram 2-2, CJK runs": (FTS(base_tokenizer="ngram", ngram_min_length=2, ngram_max_length=2,
                                    stem=False, remove_stop_words=False), True),
        "ngram 1-2, CJK runs": (FTS(base_tokenizer="ngram", ngram_min_length=1, ngram_max_length=2,
                                    stem=False, remove_stop_words=False), True),
        "ngram 2-3, CJK runs": (FTS(base_tokenizer="ngram", ngram_min_length=2, ngram_max_length=3,
                                    stem=False, remove_stop_words=False), True),
        "jieba/default": (FTS(base_tokenizer="jieba/default", stem=False, remove_stop_words=False), False),
        "icu": (FTS(base_tokenizer="icu", stem=False, remove_stop_words=False), False),
    }
    sets = {"random sub-phrases": sub_phrases(), "questions": QUESTIONS}
    db = lancedb.connect(tempfile.mkdtemp(prefix="zh-fts-"))
    print("| tokenizer | set | n | hit@1 | MRR@10 |\n| --- | --- | --- | --- | --- |")
    for name, (config, runs_only) in variants.items():
        rows = [{"n": i, "text": cjk_only(d) if runs_only else d} for i, d in enumerate(DOCS)]
        table = db.create_table(re.sub(r"\W", "_", name), data=rows, mode="overwrite")
        try:
            table.create_index("text", config=config)
        except Exception as exc:  # noqa: BLE001
            print(f"| {name} | - | - | failed: {str(exc).splitlines()[0][:60]} | |")
            continue
        for set_name, queries in sets.items():
            hit1 = mrr = 0.0
            for q, want in queries:
                qq = cjk_only(q) if runs_only else q
                got = table.search(qq, query_type="fts", fts_columns="text").select(["n", "_score"]).limit(10)
                got = got.to_arrow().to_pydict()["n"]
                hit1 += 1.0 if got[:1] == [want] else 0.0
                mrr += 1.0 / (got.index(want) + 1) if want in got else 0.0
            print(f"| {name} | {set_name} | {len(queries)} | {hit1 / len(queries):.3f} | {mrr / len(queries):.3f} |")


if __name__ == "__main__":
    main()
