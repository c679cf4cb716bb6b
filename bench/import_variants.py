"""What each embedded text of a short entry costs and earns: LoCoMo import speed against every recall benchmark.

    python bench/import_variants.py                       # every variant, every benchmark: one Markdown table
    python bench/import_variants.py --only today --only entry-alone --work /tmp/iv
    python bench/import_variants.py --corpora locomo,til  # some benchmarks (locomo, til, rustbook, vuezh, vault, zh, passages)
    python bench/import_variants.py --work A --table-only --merge B --merge C   # runs made in parallel

Each variant is a set of settings (config.md) of what a short entry is embedded as: chunk 0 (the
entry), its sentence chunks (`chunk_sentence_min_words`, `chunk_max_sentences`) and the context chunk
(`chunk_context`). For each variant, with those settings in every tree it builds:
  - `mem import` of the five LoCoMo conversations through the CLI (service off, one process each, so
    start-up and model load count): vector rows and tokens per turn by kind, CPU seconds (user+sys
    of the `mem` processes: the figure to compare on a loaded machine), wall seconds;
  - LoCoMo recall@10 of those trees, with the shipped ranker and leave-one-conversation-out (the
    ranker refitted on the other four conversations for each one: bench/fit_ranking.py; --no-loco);
  - the notes corpora (bench/notes.py: til, rustbook, vuezh and the Obsidian vault adopted from
    /tmp/notes-corpora): hit@1, hit@3, MRR@10;
  - Chinese passages (bench/chinese_passages.py, the CMRC 2018 trial set): hit@1, hit@5, MRR@10;
  - the passages of bench/ingest.py (200 English, 200 Chinese): known-item recall@5.
Every benchmark's index is fingerprinted (bench/variant_index.py): the hash of the (kind, text) rows
of its LanceDB tables, rows per entry, and the texts and tokens per entry the engine asked the
model for. A variant whose hash is the first variant's embedded exactly the same texts: "identical
index" (its recall can only differ by float rounding). The trees other than LoCoMo's are built in
this process, and the vectors of a text one variant embedded are reused by the next (every
variant embeds a subset of today's texts), so all variants cost about one; their cost is the
tokens counted, the CPU seconds are LoCoMo's `mem import` processes (no memo there).
Noise: every recall figure is a mean over questions; `±` is the std of a bootstrap over those
questions (1,000 resamples), `Δ` the difference from the first variant and `paired ±` the std of
a bootstrap of that difference over the same questions (smaller: the questions' own difficulty
cancels). A variant "holds" when no figure drops by more than the first variant's std; the table
ends with the fastest variant that holds everywhere. Results are kept in WORK/results.json: a rerun
measures only what is missing (delete the file, or a variant's trees, to measure again).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


VARIANTS = {
    "today": {},
    "no-context": {"chunk_context": "false"},
    "sentences>=25w": {"chunk_sentence_min_words": "25"},
    "max-2-sentences": {"chunk_max_sentences": "2"},
    "entry+context": {"chunk_max_sentences": "0"},
    "entry-alone": {"chunk_max_sentences": "0", "chunk_context": "false"},
}
ZH_DATA = [Path("/tmp/zh-data/cmrc2018_trial.json"), Path("/tmp/r3-logs/cmrc2018_trial.json")]
NOTES = ("til", "rustbook", "vuezh", "vault")
BENCHMARKS = ("locomo",) + NOTES + ("zh", "passages")


# --------------------------------------------------------------------------- LoCoMo
def locomo_import(work: Path, settings: dict, data: Path) -> dict:
    import locomo
    from ingest import run_mem
    from perf_cli import timed

    out = {"turns": 0, "cpu": 0.0, "wall": 0.0, "rows": {}}
    for f in sorted(data.glob("*.json")):
        lines, _ = locomo.load(f)
        root = work / f"conv{f.stem}"
        if root.exists():
            shutil.rmtree(root)
        src = work / f"conv{f.stem}.jsonl"
        src.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        timed(["init"], root, "off")
        for key, value in {"secrets": "warn", **settings}.items():
            timed(["config", "set", key, value], root, "off")
        wall, cpu, p = run_mem(["import", str(src), "--json"], root)
        if json.loads(p.stdout).get("imported") != len(lines):
            raise RuntimeError(f"conv{f.stem}: not every turn imported: {p.stdout[:300]}")
        out["turns"] += len(lines)
        out["cpu"] += cpu
        out["wall"] += wall
        for kind, n in rows_by_kind(root).items():
            out["rows"][kind] = out["rows"].get(kind, 0) + n
        sys.stderr.write(f"  conv{f.stem}: {len(lines)} turns, {wall:.1f} s, {cpu:.1f} CPU s\n")
    return out


def rows_by_kind(root: Path) -> dict:
    from collections import Counter

    from memstrata import Memory

    table = Memory(root).state.vector_index().table()
    return dict(Counter(table.to_arrow().column("kind").to_pylist()))


def locomo_import_here(work: Path, settings: dict, data: Path) -> dict:
    """The five LoCoMo trees built in this process (`Memory.import_jsonl`, the vector memo): their
    rows and recall as `locomo_import` gives them, no CPU seconds (the memo would hide the model's)."""
    import locomo

    out = {"turns": 0, "rows": {}, "in_process": True, "asked": {"embedded_texts": 0, "tokens": 0}}
    for f in sorted(data.glob("*.json")):
        lines, _ = locomo.load(f)
        index = _import_api(work / f"conv{f.stem}", lines, settings, work / f"conv{f.stem}.jsonl")
        out["turns"] += len(lines)
        for key in out["asked"]:
            out["asked"][key] += index[key]
        for kind, n in index["rows"].items():
            out["rows"][kind] = out["rows"].get(kind, 0) + n
        sys.stderr.write(f"  conv{f.stem}: {len(lines)} turns in this process\n")
    return out


def seed_memo(roots: list[Path]) -> int:
    """Put the vectors of trees other variants built into this process's memo (LoCoMo: today's
    trees, imported by `mem import` processes): texts embedded once in a run are not embedded again."""
    from variant_index import memo_embeddings, seed

    memo_embeddings()
    return sum(seed(r) for r in roots if r.is_dir())


def tokens_by_kind(work: Path, data: Path) -> dict:
    """Tokens the model ran per kind of row over a variant's LoCoMo trees (the cost that matters:
    attention grows with a text's length), counted with the bundled model's tokenizer (cut to its window)."""
    from memstrata import Memory
    from memstrata.models.embedder import get_embedder

    emb = get_embedder("bundled")
    out: dict = {}
    for f in sorted(data.glob("*.json")):
        table = Memory(work / f"conv{f.stem}").state.vector_index().table().to_arrow()
        for kind, text in zip(table.column("kind").to_pylist(), table.column("text").to_pylist()):
            out[kind] = out.get(kind, 0) + min(emb.count_tokens(text), emb.max_tokens)
    return out


def locomo_index(work: Path, data: Path, imported: dict) -> dict:
    from variant_index import tree_fingerprint

    index = tree_fingerprint([work / f"conv{f.stem}" for f in sorted(data.glob("*.json"))])
    return {"locomo_index": {**index, **imported.get("asked", {})}}


def locomo_recall(work: Path, data: Path, loco: bool) -> dict:
    import locomo
    from memstrata import Memory

    per_q, folds = [], {}
    for f in sorted(data.glob("*.json")):
        _, questions = locomo.load(f)
        rows, _ = locomo.evaluate(Memory(work / f"conv{f.stem}"), questions)
        per_q += [r["r10"] for r in rows]
        if loco:
            import fit_ranking

            folds[f.stem] = fit_ranking.examples(work / f"conv{f.stem}", questions)
    out = {"locomo_r10": per_q}
    if loco:
        import fit_ranking

        held = []
        for name in folds:
            train = fit_ranking.stack([r for other in folds if other != name for r in folds[other]])
            held += list(fit_ranking.recall_at_10(fit_ranking.stack(folds[name]), fit_ranking.fit(train)))
        out["locomo_loco_r10"] = [float(x) for x in held]
    return out


# --------------------------------------------------------------------------- the other benchmarks
def as_first(first: dict | None, key: str, index: dict, figures: list[str]) -> dict | None:
    """The first variant's figures when this variant's index of the same benchmark holds exactly the
    same texts (so the same vectors, from the memo): its questions would get the same answers."""
    if first and first.get(key, {}).get("hash") == index["hash"] and all(f in first for f in figures):
        return {key: {**index, "same_as_first": True}, **{f: first[f] for f in figures}}
    return None


def notes_recall(work: Path, settings: dict, corpora=NOTES, first: dict | None = None,
                 first_dir: Path | None = None) -> dict:
    import notes
    from variant_index import memo_embeddings, tree_fingerprint

    out = {}
    counter = memo_embeddings()
    for name in corpora:
        questions = notes.load_questions(name)
        tree = work / f"notes-{name}"
        if first_dir is not None and (first_dir / tree.name).is_dir():
            seed_memo([first_dir / tree.name])  # a run stopped and started again embeds nothing twice
        counter.reset()
        _adopt_with(tree, notes.CORPORA / name, settings)
        index = tree_fingerprint([tree], counter)
        same = as_first(first, f"{name}_index", index, [f"{name}_hit1", f"{name}_hit3", f"{name}_mrr"])
        if same:
            out.update(same)
            continue
        out[f"{name}_index"] = index
        ranked, _ = notes.memstrata_ranking(tree, questions)
        firsts = []
        for r, q in zip(ranked, questions):
            firsts.append(next((k for k, p in enumerate(r[:10], 1) if p in set(q["notes"])), None))
        out[f"{name}_hit1"] = [float(k == 1) for k in firsts]
        out[f"{name}_hit3"] = [float(k is not None and k <= 3) for k in firsts]
        out[f"{name}_mrr"] = [1.0 / k if k else 0.0 for k in firsts]
    return out


def _adopt_with(tree: Path, corpus: Path, settings: dict) -> None:
    """`mem init --adopt` of a copy of `corpus` with `settings` in its config.md before anything is
    embedded (bench/notes.py sets them after the adopt and reindexes: every note embedded twice)."""
    from memstrata import Memory

    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(corpus, tree)
    m = Memory(tree)
    m._entries.init(adopt=True)  # the tree and the notes' ids; the index is built by the sync below
    for key, value in settings.items():
        m.config_set(key, value)
    m.sync()


def _import_api(root: Path, rows: list[dict], settings: dict, src: Path) -> dict:
    """`Memory.import_jsonl` of `rows` into a fresh tree with `settings`: the fingerprint of its index."""
    from memstrata import Memory
    from variant_index import memo_embeddings, tree_fingerprint

    counter = memo_embeddings()
    counter.reset()

    if root.exists():
        shutil.rmtree(root)
    m = Memory(root)
    m.init()
    for key, value in {"secrets": "warn", **settings}.items():
        m.config_set(key, value)
    src.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    res = m.import_jsonl(src)
    if res["errors"]:
        raise RuntimeError(f"{root.name}: {len(res['errors'])} import errors, first: {res['errors'][0]}")
    return tree_fingerprint([root], counter)


def zh_recall(work: Path, settings: dict, first: dict | None = None) -> dict:
    import chinese_passages
    from memstrata import Memory

    data = next((p for p in ZH_DATA if p.exists()), None)
    if data is None:
        return {}
    passages, questions = chinese_passages.load([data], None, 7)
    root = work / "zh"
    index = _import_api(root, [{**p, "category": "zh"} for p in passages], settings, work / "zh.jsonl")
    same = as_first(first, "zh_index", index, ["zh_hit1", "zh_hit5", "zh_mrr"])
    if same:
        return same
    m = Memory(root)
    ranks = []
    for q in questions:
        ids = m.recall(q["query"], k=10, min_relevance=0, count_access=False).ids
        ranks.append(next((r for r, i in enumerate(ids, 1) if i == q["answer"]), None))
    return {"zh_index": index, "zh_hit1": [float(r == 1) for r in ranks], "zh_hit5": [float(r is not None and r <= 5) for r in ranks],
            "zh_mrr": [1.0 / r if r else 0.0 for r in ranks]}


def passages_recall(work: Path, settings: dict, n: int = 200, first: dict | None = None) -> dict:
    import ingest
    from memstrata import Memory

    out = {}
    for lang in ("en", "zh"):
        pairs = ingest.passages(n, lang)
        root = work / f"passages-{lang}"
        index = _import_api(root, [e for e, _ in pairs], settings, work / f"passages-{lang}.jsonl")
        same = as_first(first, f"passages_{lang}_index", index, [f"passages_{lang}_r5"])
        if same:
            out.update(same)
            continue
        out[f"passages_{lang}_index"] = index
        m = Memory(root)
        out[f"passages_{lang}_r5"] = [float(e["id"] in m.recall(q, k=5, min_relevance=0, count_access=False).ids)
                                      for e, q in pairs]
    return out


# --------------------------------------------------------------------------- the run
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", choices=list(VARIANTS), help="variant (repeatable)")
    ap.add_argument("--corpora", default=",".join(BENCHMARKS),
                    help=f"benchmarks to measure, comma-separated (default: all: {','.join(BENCHMARKS)})")
    ap.add_argument("--cpu-variants", default=",".join(VARIANTS),
                    help="variants whose LoCoMo import runs as `mem import` processes, CPU seconds measured "
                         "(default: all); the others are imported in this process, with the vectors of "
                         "the first ones' trees (no CPU figure)")
    ap.add_argument("--no-loco", action="store_true", help="LoCoMo with the shipped ranker only (no refit per fold)")
    ap.add_argument("--work", default="/tmp/memstrata-import-variants")
    ap.add_argument("--data", help="the LoCoMo conversations (default: as bench/locomo.py finds them)")
    ap.add_argument("--table-only", action="store_true", help="print the table of the results kept in WORK")
    ap.add_argument("--merge", action="append", default=[], metavar="DIR",
                    help="also take the figures another run kept in DIR (variants run in parallel)")
    args = ap.parse_args(argv)
    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    unknown = set(corpora) - set(BENCHMARKS)
    if unknown:
        ap.error(f"unknown benchmark(s) {sorted(unknown)}: choose among {', '.join(BENCHMARKS)}")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MEMSTRATA_RUNTIME_DIR", str(work / ".run"))
    os.environ.setdefault("MEMSTRATA_SERVICE", "off")
    store = work / "results.json"
    results = json.loads(store.read_text()) if store.exists() else {}
    import locomo
    from variant_table import table

    for other in args.merge:
        kept = Path(other) / "results.json"
        for name, figures in (json.loads(kept.read_text()) if kept.exists() else {}).items():
            for key, value in figures.items():
                results.setdefault(name, {}).setdefault(key, value)
    data = Path(args.data) if args.data else locomo.DATA
    if "locomo" in corpora and not any(data.glob("*.json")):
        raise SystemExit(f"no LoCoMo conversations in {data}")
    notes = [c for c in NOTES if c in corpora]
    cpu_variants = {v.strip() for v in args.cpu_variants.split(",") if v.strip()}
    for name in ([] if args.table_only else (args.only or list(VARIANTS))):
        settings = VARIANTS[name]
        res = results.setdefault(name, {})
        first = results.get(next(iter(VARIANTS))) if name != next(iter(VARIANTS)) else None
        vdir = work / name.replace(">=", "ge")
        vdir.mkdir(exist_ok=True)
        # (the key a step's results hold, its benchmark, the step); the notes, the slowest, last
        def imported(name=name, settings=settings, vdir=vdir):
            if name in cpu_variants:
                return {"import": locomo_import(vdir, settings, data)}
            seed_memo([work / v.replace(">=", "ge") / f"conv{f.stem}" for v in VARIANTS
                       for f in sorted(data.glob("*.json")) if v in cpu_variants])
            return {"import": locomo_import_here(vdir, settings, data)}

        steps = [("import", "locomo", imported),
                 ("tokens", "locomo", lambda: {"tokens": tokens_by_kind(vdir, data),
                                               **locomo_index(vdir, data, res["import"])}),
                 ("locomo_r10", "locomo", lambda: locomo_recall(vdir, data, not args.no_loco)),
                 ("zh_hit1", "zh", lambda: zh_recall(vdir, settings, first=first)),
                 ("passages_en_r5", "passages", lambda: passages_recall(vdir, settings, first=first))]
        steps += [(f"{c}_hit1", c, lambda c=c: notes_recall(vdir, settings, (c,), first=first,
                                                                 first_dir=work / next(iter(VARIANTS)))) for c in notes]
        for key, bench, step in steps:
            if key in res or bench not in corpora:
                continue
            if key in ("tokens", "locomo_r10") and "import" not in res:
                continue
            sys.stderr.write(f"{name}: {key}\n")
            res.update(step())
            store.write_text(json.dumps(results))
    print(table(results, list(VARIANTS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
