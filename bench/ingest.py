"""Ingestion speed through the CLI (`mem init --adopt` of a vault, `mem import` of LoCoMo turns and
~500-character passages) and known-item recall.

Usage:
  python bench/ingest.py                       # everything below, about 8-12 min on 2 quiet cores
  python bench/ingest.py --only vault          # the adopt of a vault only (--vault DIR: another one)
  python bench/ingest.py --only passages       # the passages only (about 1-2 min)
  python bench/ingest.py --only locomo         # the LoCoMo turns only
  python bench/ingest.py --only locomo --set chunk_context=false   # ... with a setting in their trees
  python bench/ingest.py --passages 200 --out bench/results/ingest.md

What is measured (each a fresh tree, service off, so every figure includes the process start
and the model load; wall seconds and CPU seconds, user+sys of the `mem` process, side by side:
on a machine other work loads, CPU seconds are the figure to compare):
  - `mem init --adopt` of a copy of a vault (default: the public Obsidian vault
    wrewsama/obsidian-vault, 427 notes, extracted from the mirror at VAULT_MIRROR when present):
    notes/s, vector rows per note (and the tokens the model runs over for them, against the
    paragraphs': most of the ratio below), and the bundled model alone embedding the same notes'
    paragraphs (blocks between blank lines, in this process, load excluded, the embedder's own
    batching): the engine's time over the model's is the issue's "at most 1.2x of the model".
    The adopt's figure includes process start, imports and model load (~2 CPU s), the model's
    excludes its load: fair to a user, unfavourable to the engine on small vaults;
  - the five LoCoMo dev conversations (../shared/bench/locomo, 3,112 turns of 10-40 words, as
    bench/locomo.py makes them): entries/s over all five imports (target >= 150);
  - N English paragraphs and N Chinese paragraphs of about 500 characters each, made
    deterministically here (no corpus ships with the repository): entries/s (target >= 20);
  - recall@5 of the passages: each is asked for by one of its sentences, shortened (English:
    its first and last words dropped; Chinese: its opening clause dropped), through
    `Memory.recall` in process. "Recall unchanged" compares this figure between two checkouts.

Compare two checkouts by running this file with each one's Python (the benchmark imports
only the `memstrata` that Python has installed): `/work/main/.venv/bin/python bench/ingest.py`.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from perf_cli import timed  # noqa: E402  (the CLI runner the performance benchmark uses)

TARGET_TURNS = 150.0
TARGET_PASSAGES = 20.0
TARGET_MODEL_RATIO = 1.2
VAULT_MIRROR = Path("/work/.mirror/wrewsama+obsidian-vault/repo")

# --------------------------------------------------------------------------- passages
_EN_NAMES = "Alice Bruno Chen Dana Emeka Farah Goran Hana Ivan Julia Kenji Lena Marco Nadia Omar Priya".split()
_EN_CITIES = "Lisbon Osaka Nairobi Quito Tallinn Hanoi Porto Dakar Leeds Perth Bergen Cusco Tromso Lyon".split()
_EN_THINGS = ("billing service", "search index", "mobile app", "data warehouse", "payment gateway", "sensor network",
              "booking system", "chat assistant", "fraud model", "video pipeline", "map renderer", "print queue")
_EN_SENTENCES = [
    "{name} moved to {city} in {year} to lead the work on the {thing}.",
    "The first version of the {thing} handled about {num} requests a minute before it slowed down.",
    "After a long review, the team in {city} decided to rewrite the {thing} in smaller parts.",
    "{name} kept a notebook of every outage, and the worst one lasted {num} minutes.",
    "Customers in {city} complained that the {thing} lost their settings after each update.",
    "The budget for {year} gave the {thing} {num} thousand euros and two more engineers.",
    "{name} argued that nobody should deploy on a Friday, and the rule stuck for years.",
    "A vendor from {city} offered a cheaper licence, but the contract hid a yearly fee.",
    "By {year} the {thing} answered most questions in under {num} milliseconds.",
    "The migration weekend in {city} ended with cold pizza and a working {thing}.",
    "{name} wrote the runbook that new hires still read in their first week.",
    "Nobody expected the {thing} to need {num} servers during the spring sale.",
]
_ZH_NAMES = "张伟 王芳 李娜 刘洋 陈静 杨磊 赵敏 黄强 周杰 吴霞 徐丽 孙浩 马超 朱琳 胡斌 郭蕾".split()
_ZH_CITIES = "杭州 成都 西安 厦门 青岛 昆明 南京 武汉 长沙 大连 苏州 重庆 贵阳 兰州".split()
_ZH_THINGS = ("计费系统 搜索索引 移动应用 数据仓库 支付网关 传感器网络 预订系统 客服机器人 风控模型 "
              "视频转码平台 地图渲染服务 打印队列").split()
_ZH_SENTENCES = [
    "{year}年，{name}搬到{city}，负责{thing}的整体设计和上线工作。",
    "第一版{thing}每分钟只能处理大约{num}个请求，高峰期经常变慢。",
    "经过几轮评审，{city}的团队决定把{thing}拆成几个更小的模块重新编写。",
    "{name}把每一次故障都记在笔记本里，最严重的一次持续了{num}分钟。",
    "{city}的用户反映，每次更新之后{thing}都会丢失他们的个人设置。",
    "{year}年的预算给{thing}拨了{num}万元，并且增加了两名工程师。",
    "{name}坚持周五不上线的规矩，后来这条规矩在公司里沿用了好几年。",
    "一家来自{city}的供应商报价更低，但合同里藏着每年都要支付的维护费。",
    "到了{year}年，{thing}大部分查询都能在{num}毫秒之内返回结果。",
    "{city}那次通宵迁移结束时，大家吃着冷掉的外卖，看着{thing}恢复正常。",
    "{name}写的运维手册至今仍是新员工入职第一周的必读材料。",
    "谁也没有想到，春季促销期间{thing}竟然需要{num}台服务器才能撑住。",
    "为了降低成本，{name}提出把{thing}的冷数据迁移到{city}的机房。",
    "上线前的压测显示，{thing}在{num}个并发用户下依然保持稳定。",
    "{name}每周一早上都会在{city}的办公室里主持{thing}的例会，会议一般不超过{num}分钟。",
    "有一次{thing}的证书过期，{name}在凌晨三点被电话叫醒，花了{num}分钟才修好。",
    "{city}分公司的同事给{thing}写了一套自动化测试，覆盖了{num}个常见场景。",
    "{year}年底，{name}把{thing}的负责人交接给了{city}的新团队，自己去做别的项目。",
]


def passages(n: int, lang: str, seed: int = 17) -> list[tuple[dict, str]]:
    """n (entry, query) pairs: ~500-character paragraphs and a query made of one of their sentences."""
    rng = random.Random(f"{lang}-{seed}")
    names, cities, things, pool, target = ((_EN_NAMES, _EN_CITIES, _EN_THINGS, _EN_SENTENCES, 460) if lang == "en"
                                           else (_ZH_NAMES, _ZH_CITIES, _ZH_THINGS, _ZH_SENTENCES, 480))
    out = []
    for i in range(n):
        slots = {"name": rng.choice(names), "city": rng.choice(cities), "thing": rng.choice(things),
                 "year": rng.randint(2005, 2025), "num": rng.randint(12, 980)}
        order = rng.sample(range(len(pool)), len(pool))
        sents: list[str] = []
        for j in order:
            if sum(map(len, sents)) >= target:
                break
            slots["num"] = rng.randint(12, 980)
            sents.append(pool[j].format(**slots))
        body = (" " if lang == "en" else "").join(sents)
        asked = sents[rng.randrange(len(sents))]
        if lang == "en":
            words = asked.rstrip(".").split()
            query = " ".join(words[1:-1]) if len(words) > 4 else asked
        else:
            query = asked.split("，", 1)[-1].rstrip("。") if "，" in asked else asked.rstrip("。")
        title = (f"Notes on the {slots['thing']} in {slots['city']}, {i}" if lang == "en"
                 else f"{slots['city']}{slots['thing']}笔记{i}")
        entry = {"id": f"{lang}p{i:04d}", "title": title, "body": body, "category": f"notes/{lang}",
                 "created": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z"}
        out.append((entry, query))
    return out


def _locomo_data() -> Path:
    """../shared/bench/locomo as bench/locomo.py finds it (beside the repository or a folder above it:
    a git worktree)."""
    import locomo

    return locomo.DATA


# --------------------------------------------------------------------------- measures
def run_mem(args: list[str], root: Path) -> tuple[float, float, "subprocess.CompletedProcess"]:
    """Run `mem ARGS` (service off) and return (wall seconds, CPU seconds of the process, result)."""
    import resource
    import subprocess

    from perf import env_for, mem_bin

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(mem_bin() + args, capture_output=True, text=True, env=env_for(root, "off"), timeout=7200)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"mem {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()[-500:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), p


def vault_source(work: Path, given: str | None) -> Path:
    """The vault to adopt: `given`, else the wrewsama vault extracted once from the mirror."""
    import subprocess

    if given:
        return Path(given)
    target = work / "wrewsama-vault"
    if not target.is_dir():
        if not VAULT_MIRROR.is_dir():
            raise SystemExit(f"no vault: pass --vault DIR (a folder of Markdown notes), or clone "
                             f"https://github.com/wrewsama/obsidian-vault to {VAULT_MIRROR.parent}/repo")
        target.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(VAULT_MIRROR), "archive", "HEAD"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def paragraphs(root: Path) -> tuple[int, list[str]]:
    """(notes, paragraphs) of a folder's Markdown notes as the engine would adopt them (dot-folders skipped)."""
    import re

    notes, out = 0, []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).parts
        if any(p.startswith(".") for p in rel) or len(rel) < 2:
            continue
        notes += 1
        text = path.read_text(encoding="utf-8", errors="replace")
        if text.startswith("---\n") and "\n---" in text[4:]:
            text = text[4:].split("\n---", 1)[1]
        out += [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    return notes, out


def model_alone(texts: list[str]) -> tuple[float, float]:
    """(wall, CPU seconds of this process) the bundled model takes to embed `texts`, load excluded."""
    import resource

    from memstrata.models.embedder import get_embedder

    emb = get_embedder("bundled")
    emb.embed(["warm up"])
    before = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    emb.embed(texts)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF)
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def adopt_vault(work: Path, source: Path) -> dict:
    """`mem init --adopt` of a fresh copy of `source`, then the model alone on its paragraphs."""
    root = work / "adopted-vault"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(source, root, ignore=shutil.ignore_patterns(".git"))
    wall, cpu, p = run_mem(["init", "--adopt", "--json"], root)
    done = json.loads(p.stdout)
    from memstrata import Memory

    rows = len(Memory(root).state.vector_index().table().to_arrow())
    texts = embedded_texts(root)
    notes, paras = paragraphs(source)
    m_wall, m_cpu = model_alone(paras)
    return {"notes": done.get("entries", notes), "rows": rows, "wall": wall, "cpu": cpu,
            "paragraphs": len(paras), "model_wall": m_wall, "model_cpu": m_cpu,
            "row_tokens": window_tokens(texts), "paragraph_tokens": window_tokens(paras)}


def embedded_texts(root: Path) -> list[str]:
    """The distinct texts the adopt had the model embed: each row's text, but for a note's chunk 0
    and sections the text each is embedded as (its head: retrieval.chunking.note_head; a section's
    shorter heading prefix: SECTION_PREFIX), which the row does not keep."""
    from memstrata import Memory
    from memstrata.models.embedder import get_embedder
    from memstrata.retrieval import chunking
    from memstrata.retrieval.table import indexed_form, row_id

    m = Memory(root)
    emb, s = get_embedder("bundled"), m.settings
    data = m.state.vector_index().table().to_arrow().select(["id", "chunk", "text"]).to_pydict()
    made = {}
    for e in m.catalog.entries():
        e = indexed_form(root, m.resolve(e.id or e.path))  # the catalog holds no bodies
        for chunk in chunking.chunk_entry(e.title, e.body, emb.count_tokens, emb.max_tokens, s.chunk_overlap_tokens,
                                          s.chunk_max_sentences, s.chunk_sentence_min_words):
            made[(row_id(e), chunk.number)] = chunk
    texts = []
    for rid, number, text in zip(data["id"], data["chunk"], data["text"]):
        chunk = made.get((rid, number))
        if chunk is None or not chunk.pooled:
            texts.append(chunk.embedded if chunk is not None and chunk.text == text else text)
    return list(dict.fromkeys(texts))


def window_tokens(texts: list[str]) -> int:
    """Tokens the model runs over for `texts` (each cut to its window): the work, before padding."""
    from memstrata.models.embedder import get_embedder

    emb = get_embedder("bundled")
    return sum(min(len(i), emb.max_tokens) for i in emb.token_ids(texts))


def import_rate(work: Path, name: str, lines: list[dict], settings: dict | None = None) -> tuple[float, float, Path]:
    """`mem init` (+ `mem config set` of `settings`) + `mem import` of `lines` into a fresh tree:
    (entries/s, seconds, root); the import's CPU seconds are added to IMPORT_CPU[name]."""
    root = work / name
    if root.exists():
        shutil.rmtree(root)
    src = work / f"{name}.jsonl"
    src.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    timed(["init"], root, "off")
    for key, value in {"secrets": "warn", **(settings or {})}.items():
        timed(["config", "set", key, value], root, "off")
    took, cpu, p = run_mem(["import", str(src), "--json"], root)
    IMPORT_CPU[name] = cpu
    done = json.loads(p.stdout)
    if done.get("imported") != len(lines):
        raise RuntimeError(f"{name}: imported {done.get('imported')} of {len(lines)}: {done.get('errors', [])[:2]}")
    return len(lines) / took, took, root


IMPORT_CPU: dict[str, float] = {}


def known_item_recall(root: Path, pairs: list[tuple[dict, str]], k: int = 5) -> float:
    from memstrata import Memory

    m = Memory(root)
    found = 0
    for entry, query in pairs:
        ids = m.recall(query, k=k, min_relevance=0, count_access=False).ids
        found += entry["id"] in ids
    return found / len(pairs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("vault", "locomo", "passages"))
    ap.add_argument("--vault", help="a folder of Markdown notes to adopt (default: the wrewsama vault from the mirror)")
    ap.add_argument("--passages", type=int, default=200, help="passages per language")
    ap.add_argument("--data", default=str(_locomo_data()))
    ap.add_argument("--work", default="/tmp/memstrata-ingest")
    ap.add_argument("--out")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting of the LoCoMo trees (e.g. chunk_context=false: bench/import_variants.py)")
    args = ap.parse_args(argv)
    settings = dict(s.split("=", 1) for s in args.set)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()
    rows = []
    if args.only in (None, "vault"):
        v = adopt_vault(work, vault_source(work, args.vault))
        ratio = v["cpu"] / max(v["model_cpu"], 1e-9)
        print(f"vault: {v['notes']} notes, {v['rows']} rows, {v['wall']:.1f} s ({v['cpu']:.1f} CPU s); model alone "
              f"{v['paragraphs']} paragraphs {v['model_wall']:.1f} s ({v['model_cpu']:.1f} CPU s)", file=sys.stderr)
        rows.append((f"`mem init --adopt`, {v['notes']} notes", f"{v['notes'] / v['wall']:.2f} notes/s ({v['wall']:.0f} s); "
                     f"{v['notes'] / v['cpu']:.2f} notes per CPU s ({v['cpu']:.0f} CPU s)", "3x the release", ""))
        rows.append(("vector rows per note", f"{v['rows'] / max(v['notes'], 1):.1f} ({v['rows']} rows, "
                     f"{v['row_tokens']} tokens; the paragraphs: {v['paragraph_tokens']})", "", ""))
        rows.append((f"bundled model alone (loaded; load excluded), the {v['paragraphs']} paragraphs of those notes",
                     f"{v['model_wall']:.0f} s, {v['model_cpu']:.0f} CPU s (adopt / model: {ratio:.2f}x in CPU s, "
                     f"{v['wall'] / max(v['model_wall'], 1e-9):.2f}x wall)", f"<= {TARGET_MODEL_RATIO}x",
                     "met" if ratio <= TARGET_MODEL_RATIO else "NOT met"))
    if args.only in (None, "locomo"):
        import locomo

        total, secs, cpu = 0, 0.0, 0.0
        for f in sorted(Path(args.data).glob("*.json")):
            lines, _ = locomo.load(f)
            rate, took, _ = import_rate(work, f"conv{f.stem}", lines, settings)
            total += len(lines)
            secs += took
            cpu += IMPORT_CPU[f"conv{f.stem}"]
            print(f"conversation {f.stem}: {len(lines)} turns, {took:.1f} s ({IMPORT_CPU[f'conv{f.stem}']:.1f} CPU s), "
                  f"{rate:.1f}/s", file=sys.stderr)
        rate = total / secs
        given = f"; {', '.join(f'{k}={v}' for k, v in settings.items())}" if settings else ""
        rows.append((f"`mem import`, LoCoMo turns ({total}, five conversations{given})", f"{rate:.1f} entries/s "
                     f"({secs:.0f} s); {total / cpu:.1f} entries per CPU s ({cpu:.0f} CPU s)", f">= {TARGET_TURNS:.0f}",
                     "met" if rate >= TARGET_TURNS else "NOT met"))
    if args.only in (None, "passages"):
        for lang, label in (("en", "English"), ("zh", "Chinese")):
            pairs = passages(args.passages, lang)
            chars = sum(len(e["body"]) for e, _ in pairs) / len(pairs)
            rate, took, root = import_rate(work, f"passages-{lang}", [e for e, _ in pairs])
            r5 = known_item_recall(root, pairs)
            print(f"{label}: {rate:.1f}/s, recall@5 {r5:.3f}", file=sys.stderr)
            rows.append((f"`mem import`, {len(pairs)} {label} passages (~{chars:.0f} characters)",
                         f"{rate:.1f} entries/s ({took:.0f} s)", f">= {TARGET_PASSAGES:.0f}",
                         "met" if rate >= TARGET_PASSAGES else "NOT met"))
            rows.append(("known-item recall@5 of those passages", f"{r5:.3f}", "unchanged", ""))
    from memstrata.models.embedder import get_embedder

    backend = get_embedder("bundled").backend
    load1 = os.getloadavg()
    text = "\n".join([f"# memstrata ingestion ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
                      f"{os.cpu_count()} cores; embedding backend {backend}; load average at start {load0[0]:.1f}, "
                      f"at end {load1[0]:.1f}. Service off: each figure includes process start and model load. CPU s: user+sys "
                      f"of the `mem` process (threads included): the figure to compare on a loaded machine.", "",
                      "| measure | result | target | verdict |", "| --- | --- | --- | --- |"]
                     + [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
