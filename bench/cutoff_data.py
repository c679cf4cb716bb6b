"""Collect what the cut-off is fitted on: the top hits' relevance signals of every query on every corpus.

    python bench/cutoff_data.py --out DIR --locomo DIR1 --notes DIR2 --zh DIR3 --zh-data trial.json

DIR1: the trees `bench/locomo.py --reuse DIR1` built; DIR2: those `bench/notes.py --reuse DIR2`
built; DIR3: the tree `bench/chinese_passages.py --dir DIR3` built (CMRC trial set only). Tiny
trees (five notes or passages each, drawn from til and the CMRC trial set, with their own
questions) are built under DIR/tiny. The notes corpora: til, rustbook, vuezh, vault, zettel, weekly and advjava
(each when bench/notes/<corpus>.jsonl and its tree are there). For each corpus it writes DIR/<corpus>.json: one
record per
query ({corpus, kind, query, topic, hits: [[label, signals...]]}) for the first
scoring.relevance.CUT_DEPTH hits (no cut-off). Kinds: `answer` (a question whose answer is in
the tree; label 1 on its answer), `everyday-fit` and `everyday-held` (bench/everyday.py),
`offtopic` (questions about something else: another conversation's, OFFTOPIC: general knowledge,
small talk with a topic, requests to write code or text, English and Chinese) and `offtopic-held`
(OFFTOPIC_HELD: never fitted on, measured only). `topic` is retrieval.prompts.has_topic: the hook asks nothing without it.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEMSTRATA_SERVICE", "off")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import everyday  # noqa: E402

OFFTOPIC = ["How do I renew my passport?", "How many cups are in a litre?", "Which train goes to the airport?",
            "Why is the sky blue?", "What is the longest river in South America?", "How do vaccines work?",
            "What's the plot of Hamlet?", "What is inflation?", "Who invented the telephone?",
            "How do I sharpen a kitchen knife?", "What does GDPR stand for?", "How do bees make honey?",
            "明年去哪里旅游好？", "怎么做红烧肉？", "北京今天限行吗？", "最近有什么好看的电影？", "感冒了吃什么药？",
            "苹果手机怎么截图？", "世界上最高的山是哪座？", "怎么学好英语？", "地铁几点停运？", "猫为什么喜欢睡觉？",
            # issue 40: Chinese small talk with a topic, general knowledge, requests to write code or text
            "法国的首都是哪里？", "帮我写一个快速排序", "今天晚饭吃什么好", "给我讲个笑话吧", "怎么煮出好吃的米饭",
            "推荐几本好看的科幻小说", "地球到月球有多远", "用 Python 写一个冒泡排序", "帮我把这段话翻译成英文",
            "周杰伦最新的专辑叫什么", "怎么缓解颈椎痛", "北京到上海的高铁要坐多久", "写一首关于秋天的诗",
            "猫一天要睡多少个小时", "如何提高睡眠质量", "帮我算一下 37 乘以 48 等于多少", "世界杯下一届在哪里举办",
            "怎么给自行车补胎", "用 JavaScript 实现一个防抖函数", "谢谢你的帮助，今天就到这里吧", "你是谁？",
            "最近心情不太好，能陪我聊聊吗", "熊猫主要吃什么", "怎么做番茄炒蛋", "帮我生成一个随机密码", "明天会下雨吗",
            "哪个牌子的空调比较省电", "二战是哪一年结束的", "写一个 SQL 查询，找出工资最高的员工", "怎么养多肉植物"]
# Written with the list above, before anything ran on either; never fitted on: measured only (`offtopic-held`).
OFFTOPIC_HELD = ["意大利的首都是哪座城市？", "帮我写个二分查找", "周末去哪里爬山比较好", "怎么折纸飞机", "怎样才能戒烟",
                 "帮我写一封请假邮件", "长城有多长", "用 Go 写一个 HTTP 服务器", "好无聊啊，说点有意思的", "怎么清洗羽绒服",
                 "鲁迅原名叫什么", "给我推荐一部电影", "写一个正则表达式匹配邮箱", "孩子发烧了怎么办", "感冒了能洗澡吗",
                 "帮我检查一下这段代码有没有 bug", "红烧肉要炖多久", "刚刚说的那个方案挺好的，谢谢", "怎么腌咸鸭蛋",
                 "早上喝咖啡好还是喝茶好", "What's a good recipe for banana bread?", "How tall is Mount Kilimanjaro?",
                 "write me a haiku about rain", "can you recommend a podcast about history?"]


# A Chinese corpus is also asked another Chinese corpus's questions, as a LoCoMo conversation is asked
# the next one's (issue 40): questions about something else, written the way a user asks (a backend
# notes collection against a weekly newsletter's questions on culture and business, Vue's docs
# against the backend notes', the newsletter against Vue's). English questions are left out.
OTHER_CORPUS = {"weekly": "vuezh", "advjava": "weekly", "vuezh": "advjava", "zh": "advjava"}


def other_corpus(name: str) -> list[str]:
    import notes as notes_bench
    from memstrata.retrieval import lexical

    other = OTHER_CORPUS.get(name)
    if other is None or not (HERE / "notes" / f"{other}.jsonl").exists():
        return []
    return [q["question"] for q in notes_bench.load_questions(other) if lexical.has_cjk(q["question"])]


def hits_of(m, query, want, key="id"):
    from memstrata.retrieval.prompts import has_topic
    from memstrata.scoring.relevance import CUT_DEPTH, FEATURES

    res = m.recall(query, k=CUT_DEPTH, explain=True, min_relevance=0, count_access=False)
    rows = []
    for h in res.results:
        sig = (h.signals or {}).get("relevance_signals") or {}
        label = 1 if (h.path if key == "path" else h.id) in want else 0
        rows.append([label] + [float(sig.get(f) or 0.0) for f in FEATURES] + [float(h.relevance or 0.0)])
    return {"query": query, "topic": has_topic(query), "hits": rows, "strategy": res.strategy}


HELD_ONLY = False  # --held-out-only: ask only everyday.HELD_OUT (written to <corpus>.held.json)


def ask(m, corpus, questions, key="id", offtopic=()):
    """questions: [(query, set of answers)]."""
    if HELD_ONLY:
        return [{"corpus": corpus, "kind": "everyday-held", **hits_of(m, q, set(), key)} for q in everyday.HELD_OUT]
    out = [{"corpus": corpus, "kind": "answer", **hits_of(m, q, want, key)} for q, want in questions]
    for kind, prompts in (("everyday-fit", everyday.FIT), ("everyday-held", everyday.HELD_OUT),
                          ("offtopic", list(offtopic)), ("offtopic-held", OFFTOPIC_HELD)):
        out += [{"corpus": corpus, "kind": kind, **hits_of(m, q, set(), key)} for q in prompts]
    return out


def tiny_trees(base: Path, zh_data: Path, embedder):
    """Trees of five entries: five til notes with their questions; five CMRC trial passages with theirs."""
    from memstrata import Memory
    import notes as notes_bench

    rng = random.Random(24)
    til = notes_bench.load_questions("til")
    rng.shuffle(til)
    groups = [til[i:i + 5] for i in range(0, 30, 5)]
    for g, qs in enumerate(groups):
        root = base / f"til{g}"
        if root.exists():
            shutil.rmtree(root)
        m = Memory(root, embedder=embedder)
        m.init()
        wanted = {}
        for q in qs:
            for rel in q["notes"][:1]:
                text = (notes_bench.CORPORA / "til" / rel).read_text(encoding="utf-8")
                title = next((ln.lstrip("# ").strip() for ln in text.splitlines() if ln.startswith("#")), rel)
                e = m.write(text, title=title[:80], category=rel.split("/")[0], created=f"2026-0{g + 1}-0{len(wanted) + 1}T10:00:00Z")
                wanted[rel] = e.id
        others = [q["question"] for h in groups if h is not qs for q in h][:10]
        yield m, [(q["question"], {wanted[r] for r in q["notes"] if r in wanted}) for q in qs], others
    import chinese_passages as zh

    passages, questions = zh.load([zh_data], None, 7)
    by = {}
    for q in questions:
        by.setdefault(q["answer"], []).append(q["query"])
    pids = sorted(by)
    rng.shuffle(pids)
    for g in range(3):
        root = base / f"zh{g}"
        if root.exists():
            shutil.rmtree(root)
        m = Memory(root, embedder=embedder)
        m.init()
        ids, qs = {}, []
        for n, pid in enumerate(pids[g * 5:g * 5 + 5]):
            p = next(x for x in passages if x["id"] == pid)
            ids[pid] = m.write(p["body"], title=p["title"], category="zh", created=f"2026-0{g + 1}-0{n + 1}T10:00:00Z").id
            qs += [(q, {ids[pid]}) for q in by[pid][:2]]
        others = [q for pid in pids[15:25] for q in by[pid][:1]]
        yield m, qs, others


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--locomo", type=Path)
    ap.add_argument("--notes", type=Path)
    ap.add_argument("--locomo-data", type=Path, default=Path("/work/shared/bench/locomo"))
    ap.add_argument("--zh", type=Path)
    ap.add_argument("--zh-data", type=Path)
    ap.add_argument("--zh-questions", type=int, default=300)
    ap.add_argument("--only", action="append")
    ap.add_argument("--held-out-only", action="store_true", help="ask only bench/everyday.py's HELD_OUT prompts")
    args = ap.parse_args(argv)
    global HELD_ONLY
    HELD_ONLY = args.held_out_only
    from memstrata import Memory

    args.out.mkdir(parents=True, exist_ok=True)
    want = set(args.only or ["locomo", "til", "rustbook", "vuezh", "vault", "zettel", "weekly", "advjava", "zh", "tiny"])
    embedder = Memory(args.notes / "til").state.model() if args.notes else None  # one model for every tree

    def save(name, records):
        (args.out / f"{name}{'.held' if HELD_ONLY else ''}.json").write_text(json.dumps(records, ensure_ascii=False))
        sys.stderr.write(f"{name}: {len(records)} queries\n")

    for name in ("til", "rustbook", "vuezh", "vault", "zettel", "weekly", "advjava"):
        # each notes corpus only where its questions and tree are (vault, zettel, weekly and advjava came later)
        if name in want and args.notes and (args.notes / name).is_dir() and (HERE / "notes" / f"{name}.jsonl").exists():
            import notes as notes_bench

            m = Memory(args.notes / name, embedder=embedder)
            qs = [(q["question"], set(q["notes"])) for q in notes_bench.load_questions(name)]
            save(name, ask(m, name, qs, key="path", offtopic=OFFTOPIC + other_corpus(name)))
    if "locomo" in want and args.locomo:
        import locomo

        convs = {f.stem: locomo.load(f)[1] for f in sorted(args.locomo_data.glob("*.json"))}
        names = list(convs)
        records = []
        for i, name in enumerate(names):
            m = Memory(args.locomo / f"conv{name}", embedder=embedder)
            other = [q["query"] for q in convs[names[(i + 1) % len(names)]][:40]]
            records += ask(m, f"locomo{name}", [(q["query"], q["evidence"]) for q in convs[name]],
                           offtopic=other + OFFTOPIC)
            sys.stderr.write(f"conversation {name}\n")
        save("locomo", records)
    if "zh" in want and args.zh:
        import chinese_passages as zh

        _, questions = zh.load([args.zh_data], args.zh_questions, 7)
        m = Memory(args.zh, embedder=embedder)
        save("zh", ask(m, "zh", [(q["query"], {q["answer"]}) for q in questions], offtopic=OFFTOPIC + other_corpus("zh")))
    if "tiny" in want and args.notes and args.zh_data:
        records = []
        for m, qs, others in tiny_trees(args.out / "tiny", args.zh_data, embedder):
            records += ask(m, "tiny", qs, offtopic=OFFTOPIC[:4] + OFFTOPIC[18:22] + others)
        save("tiny", records)


if __name__ == "__main__":
    main()
