"""Notes recall benchmark: each corpus adopted into a fresh tree, its questions asked through `Memory.recall`.

    python bench/notes_corpora.py                         # once: the corpora into /tmp/notes-corpora
    python bench/notes.py --reuse /tmp/notes-trees        # build (or reuse) the trees, print the table
    python bench/notes.py --reuse DIR --only til --set chunk_max_sentences=0

Questions: bench/notes/<corpus>.jsonl ({"question", "notes": paths relative to the corpus}).
A question is answered at k when one of its notes is among the first k notes returned. Beside
memstrata (`mem init --adopt` of a copy of the corpus, then `recall(q, min_relevance=0)`): BM25
over whole notes (words; CJK as character bigrams) and the bundled MiniLM, max cosine over the
notes' paragraphs (blank-line separated), as a new user would write them in 30 lines.
`--dump FILE` keeps memstrata's ranked paths per question (for bench/fit_notes.py). `--cut` also
asks each question at the default relevance cut-off and prints the share of the answerable ones
(an answer in the first 10 without a cut-off) that keep an answer.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEMSTRATA_SERVICE", "off")

REPO = Path(__file__).resolve().parent.parent
QUESTIONS = REPO / "bench" / "notes"
CORPORA = Path("/tmp/notes-corpora")
_WORD = re.compile(r"[a-z0-9_]+")
_CJK = re.compile(r"[\u3400-\u9fff]+")


def load_questions(name: str) -> list[dict]:
    return [json.loads(x) for x in (QUESTIONS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]


def note_files(corpus: Path) -> dict[str, str]:
    return {p.relative_to(corpus).as_posix(): p.read_text(encoding="utf-8", errors="replace")
            for p in sorted(corpus.rglob("*.md"))}


def tokens(text: str) -> list[str]:
    text = text.lower()
    out = _WORD.findall(text)
    for run in _CJK.findall(text):
        out += [run[i:i + 2] for i in range(len(run) - 1)] or [run]
    return out


def bm25_ranking(notes: dict[str, str], questions: list[dict], k1=1.2, b=0.75) -> list[list[str]]:
    docs = {p: Counter(tokens(t)) for p, t in notes.items()}
    avg = sum(sum(c.values()) for c in docs.values()) / max(len(docs), 1)
    df = Counter(t for c in docs.values() for t in c)
    n = len(docs)
    out = []
    for q in questions:
        terms = set(tokens(q["question"]))
        scores = {}
        for p, c in docs.items():
            length = sum(c.values())
            s = 0.0
            for t in terms:
                if t in c:
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    s += idf * c[t] * (k1 + 1) / (c[t] + k1 * (1 - b + b * length / avg))
            scores[p] = s
        out.append(sorted(scores, key=lambda p: -scores[p])[:10])
    return out


def paragraph_ranking(notes: dict[str, str], questions: list[dict], cache: Path | None) -> list[list[str]]:
    import numpy as np

    from memstrata.models.embedder import get_embedder

    emb = get_embedder()
    paras, owner = [], []
    for p, t in notes.items():
        for para in re.split(r"\n\s*\n", t):
            if para.strip():
                paras.append(para.strip())
                owner.append(p)
    if cache is not None and cache.exists():
        vecs = np.load(cache)
    else:
        vecs = emb.embed(paras)
        if cache is not None:
            np.save(cache, vecs)
    owner_arr = np.array(owner)
    out = []
    for q in questions:
        cos = vecs @ emb.embed_query(q["question"])
        best: dict[str, float] = {}
        for i in np.argsort(-cos):
            best.setdefault(owner_arr[i], float(cos[i]))
            if len(best) >= 10:
                break
        out.append(list(best))
    return out


def build(name: str, tree: Path, reuse: bool, settings: dict) -> float:
    from memstrata import Memory

    if reuse and ((tree / ".memstrata" / "vectors").exists() or (tree / ".vectors").exists()):
        return 0.0  # an adopted vault keeps its index in .memstrata/
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(CORPORA / name, tree)
    m = Memory(tree)
    t = time.perf_counter()
    res = m.init(adopt=True)
    for key, value in settings.items():
        m.config_set(key, value)
    if settings:
        m.reindex()
    sys.stderr.write(f"{name}: adopted {res.get('adopted')} notes, index {res.get('index')}\n")
    return time.perf_counter() - t


def memstrata_ranking(tree: Path, questions: list[dict]) -> tuple[list[list[str]], float]:
    """memstrata's ranked paths per question, and the index's rows (embedded texts) per note."""
    from memstrata import Memory

    m = Memory(tree)
    m.recall("warm up", count_access=False)
    index = m._recall.state.vector_index()
    rows = index.table().count_rows() / max(len(index.frame().ids), 1)
    return [[h.path for h in m.recall(q["question"], k=10, min_relevance=0, count_access=False).results]
            for q in questions], rows


def cut_kept(tree: Path, questions: list[dict], ranked: list[list[str]]) -> tuple[int, int]:
    """(kept, answerable): questions with an answer in the first 10 without a cut-off, and those of
    them that keep one at the default relevance cut-off."""
    from memstrata import Memory

    m = Memory(tree)
    kept = answerable = 0
    for q, paths in zip(questions, ranked):
        want = set(q["notes"])
        if not want & set(paths[:10]):
            continue
        answerable += 1
        got = {h.path for h in m.recall(q["question"], k=10, count_access=False).results}
        kept += bool(want & got)
    return kept, answerable


def scores(rankings: list[list[str]], questions: list[dict]) -> dict:
    hits = {1: 0, 3: 0, 10: 0}
    mrr = 0.0
    for ranked, q in zip(rankings, questions):
        want = set(q["notes"])
        first = next((r for r, p in enumerate(ranked[:10], 1) if p in want), None)
        for k in hits:
            hits[k] += bool(first and first <= k)
        mrr += 1.0 / first if first else 0.0
    n = max(len(questions), 1)
    return {"n": len(questions), "hit1": hits[1] / n, "hit3": hits[3] / n, "hit10": hits[10] / n, "mrr": mrr / n}


def line(corpus: str, who: str, s: dict) -> str:
    return f"| {corpus} | {who} | {s['n']} | {s['hit1']:.2f} | {s['hit3']:.2f} | {s['hit10']:.2f} | {s['mrr']:.3f} |"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reuse", required=True, help="folder of the trees (built when missing)")
    ap.add_argument("--corpora", default="/tmp/notes-corpora", help="the folder bench/notes_corpora.py extracted to")
    ap.add_argument("--only", action="append")
    ap.add_argument("--rebuild", action="store_true", help="build the trees again even when present")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--doc-min-tokens", type=int, help="experiment: chunk notes longer than this by sections "
                    "(retrieval.chunking.DOCUMENT_MIN_TOKENS; the trees built with it)")
    ap.add_argument("--section-tokens", type=int, help="experiment: group a section's paragraphs up to this "
                    "many tokens (retrieval.chunking.SECTION_TOKENS; the trees built with it)")
    ap.add_argument("--long-section-tokens", type=int, help="experiment: the same for notes past the model window "
                    "only (retrieval.chunking.LONG_SECTION_TOKENS)")
    ap.add_argument("--dump", help="write memstrata's ranked paths per question to this JSON file")
    ap.add_argument("--cut", action="store_true", help="also: answers kept at the default relevance cut-off")
    args = ap.parse_args(argv)
    global CORPORA
    CORPORA = Path(args.corpora)
    base = Path(args.reuse)
    base.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MEMSTRATA_RUNTIME_DIR", str(base / ".run"))
    settings = dict(s.split("=", 1) for s in args.set)
    if args.doc_min_tokens is not None:
        from memstrata.retrieval import chunking

        chunking.DOCUMENT_MIN_TOKENS = args.doc_min_tokens
    if args.section_tokens is not None:
        from memstrata.retrieval import chunking

        chunking.SECTION_TOKENS = args.section_tokens
    if args.long_section_tokens is not None:
        from memstrata.retrieval import chunking

        chunking.LONG_SECTION_TOKENS = args.long_section_tokens
    names = args.only or sorted(p.stem for p in QUESTIONS.glob("*.jsonl"))
    rows, dump = [], {}
    for name in names:
        questions = load_questions(name)
        tree = base / name
        secs = build(name, tree, reuse=not args.rebuild, settings=settings)
        ranked, per_note = memstrata_ranking(tree, questions)
        dump[name] = ranked
        rows.append(line(name, f"memstrata ({per_note:.1f} rows/note)", scores(ranked, questions)))
        if args.cut:
            kept = cut_kept(tree, questions, ranked)
            rows.append(f"| {name} | answerable questions keeping an answer at the default cut-off | {kept[1]} "
                        f"| {kept[0] / max(kept[1], 1):.3f} | | | |")
        if not args.no_baselines:
            notes = note_files(CORPORA / name)
            rows.append(line(name, "BM25, whole notes", scores(bm25_ranking(notes, questions), questions)))
            rows.append(line(name, "MiniLM, max cosine over paragraphs",
                             scores(paragraph_ranking(notes, questions, base / f"{name}.paragraphs.npy"), questions)))
        sys.stderr.write(f"{name}: {len(questions)} questions{f', built in {secs:.0f} s' if secs else ''}\n")
    print("| corpus | retriever | questions | hit@1 | hit@3 | hit@10 | MRR@10 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    if args.dump:
        Path(args.dump).write_text(json.dumps(dump))


if __name__ == "__main__":
    main()
