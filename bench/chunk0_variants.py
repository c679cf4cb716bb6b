"""Chunk 0 of a note: what each way of embedding it costs (tokens, CPU s) and does to the notes' recall.

    python bench/chunk0_variants.py recall --trees /tmp/chunk0-trees --cache /tmp/chunk0-cache whole outline:64 ...
    python bench/chunk0_variants.py cost --vault /tmp/vault160 --work /tmp/chunk0-cost whole outline:64 ...
    python bench/chunk0_variants.py table --trees /tmp/chunk0-trees --costs /tmp/chunk0-cost/costs.json --base whole
    python bench/chunk0_variants.py tokens --only /tmp/vault160 outline:32 outline:32,shorthead=section ...

A variant is retrieval.chunking's HEAD_MODE, `:N` its HEAD_TOKENS, `+long` HEAD_LONG_ONLY (only notes
past the model window): `whole` (today: the note itself, cut to the window by the model), `first:64`,
`outline:64` (title, heading outline, opening sentence), `section` (the first section's vector); options
after commas (`set_variant`): the sections' prefix, short notes whole, chunk 0 of short notes. `tokens`
counts what each variant would embed per corpus and chunk kind by chunking alone (no model, no tree).

`recall` adopts each notes corpus (bench/notes.py's questions) into TREES/<variant>/<corpus> and asks
its questions through `Memory.recall`, as bench/notes.py does; the vectors of texts already embedded by
an earlier variant come from a cache (CACHE: text hash -> vector; the model gives a text the same
vector alone or batched), so a variant costs only its new texts. It records each question's rank and
the tokens the adopt had the model run over. `cost` adopts a copy of VAULT per variant in this process
(model loaded and warm, LanceDB imported) and embeds the notes' paragraphs with the model alone
(bench/ingest.py's "model alone"), interleaved, and reports CPU seconds of this process: the adopt's
figure here leaves out the `mem` process start, imports and model load (~2 CPU s) that bench/ingest.py
charges it. `table` prints each variant against `--base` with the paired noise: the standard deviation of
the per-question differences over sqrt(n).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEMSTRATA_SERVICE", "off")
sys.path.insert(0, str(Path(__file__).resolve().parent))

CORPORA = ("til", "rustbook", "vuezh", "vault", "zettel")


def set_variant(name: str) -> None:
    """`MODE[:N][+long][,p=PREFIX][,few=K:MODE][,short=T]`: chunk 0's HEAD_MODE, HEAD_TOKENS, HEAD_LONG_ONLY;
    the sections' SECTION_PREFIX (path, nearest, title, none); chunk 0 of a note of at most K sections as
    MODE; a note of at most T tokens chunk 0 alone (WHOLE_NOTE_TOKENS)."""
    from memstrata.retrieval import chunking

    head, *options = name.split(",")
    mode, _, rest = head.partition(":")
    long_only = head.endswith("+long")
    mode = mode.replace("+long", "")
    chunking.HEAD_MODE = mode
    chunking.HEAD_TOKENS = int(rest.replace("+long", "")) if rest else 64
    chunking.HEAD_LONG_ONLY = long_only
    chunking.SECTION_PREFIX = "path"
    chunking.HEAD_FEW_SECTIONS, chunking.HEAD_FEW_MODE = 0, "section"
    chunking.WHOLE_NOTE_TOKENS = 0
    chunking.HEAD_SHORT_MODE = None
    for option in options:
        key, _, value = option.partition("=")
        if key == "p":
            chunking.SECTION_PREFIX = value
        elif key == "shorthead":
            chunking.HEAD_SHORT_MODE = value
        elif key == "short":
            chunking.WHOLE_NOTE_TOKENS = int(value)
        elif key == "few":
            count, _, few_mode = value.partition(":")
            chunking.HEAD_FEW_SECTIONS, chunking.HEAD_FEW_MODE = int(count), few_mode or "section"
        else:
            raise SystemExit(f"unknown variant option {option!r} in {name!r}")


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class CachedEmbedder:
    """The bundled embedder with a text -> vector cache in front of `embed` (what an adopt embeds)."""

    def __init__(self, real, path: Path):
        import numpy as np

        self.real, self.path, self.asked = real, path, []
        self.vecs: dict[str, np.ndarray] = {}
        if path.exists():
            data = np.load(path)
            self.vecs = dict(zip(data["keys"].tolist(), data["vecs"]))

    def __getattr__(self, name):
        return getattr(self.real, name)

    def embed(self, texts, batch_size: int = 32, progress=None):
        import numpy as np

        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        self.asked.extend(texts)
        missing = {k: t for k, t in zip(keys, texts) if k not in self.vecs}
        if missing:
            for k, v in zip(missing, self.real.embed(list(missing.values()), batch_size=batch_size)):
                self.vecs[k] = v
        if progress is not None:
            progress(len(texts), len(texts))
        return np.stack([self.vecs[k] for k in keys]) if keys else np.zeros((0, self.real.dim), np.float32)

    def save(self) -> None:
        import numpy as np

        keys = list(self.vecs)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), vecs=np.stack([self.vecs[k] for k in keys]))
        os.replace(tmp, self.path)


def window_tokens(emb, texts: list[str]) -> int:
    return sum(min(len(i), emb.max_tokens) for i in emb.token_ids(texts))


def tokens(args) -> None:
    """Tokens the model would run over per corpus and chunk kind, by chunking alone (no model run, no
    tree): each note read as the adopt reads it (frontmatter, title, aliases)."""
    from pathlib import PurePosixPath

    from memstrata.models.embedder import get_embedder
    from memstrata.retrieval import chunking, names
    from memstrata.storage import codec
    from memstrata.storage.config import Settings

    emb, s = get_embedder(), Settings()
    out = {}
    for variant in args.variants:
        set_variant(variant)
        for corpus in args.only or CORPORA:
            by_kind: dict[str, list[int]] = {}
            seen = set()
            source = Path(corpus) if "/" in corpus else args.corpora / corpus  # a path: any folder of notes
            for path in sorted(source.rglob("*.md")):
                rel = path.relative_to(source).as_posix()
                e = names.with_aliases(codec.parse(path.read_text(encoding="utf-8", errors="replace"), path=rel,
                                                   fallback_title=PurePosixPath(rel).stem, id_key="mem-id"))
                for c in chunking.chunk_entry(e.title, e.body, emb.count_tokens, emb.max_tokens,
                                              s.chunk_overlap_tokens, s.chunk_max_sentences, s.chunk_sentence_min_words):
                    if c.pooled or c.embedded in seen:
                        continue
                    seen.add(c.embedded)
                    cell = by_kind.setdefault(c.kind, [0, 0])
                    cell[0] += 1
                    cell[1] += min(emb.count_tokens(c.embedded), emb.max_tokens)
            total = sum(t for _, t in by_kind.values())
            out.setdefault(variant, {})[corpus] = total
            sys.stderr.write(f"{variant} {corpus}: {total} tokens; " + ", ".join(
                f"{k} {n} texts {t}" for k, (n, t) in sorted(by_kind.items())) + "\n")
    print(json.dumps(out, indent=1))


def recall(args) -> None:
    from notes import load_questions, memstrata_ranking

    SOURCE = args.corpora

    from memstrata import Memory
    from memstrata.models.embedder import get_embedder

    real = get_embedder()
    args.cache.mkdir(parents=True, exist_ok=True)
    cached = CachedEmbedder(real, args.cache / "vectors.npz")
    for variant in args.variants:
        set_variant(variant)
        out_file = args.trees / variant / "result.json"
        result = json.loads(out_file.read_text()) if out_file.exists() else {}
        for corpus in args.only or CORPORA:
            if corpus in result:
                continue
            tree = args.trees / variant / corpus
            if tree.exists():
                shutil.rmtree(tree)
            shutil.copytree(SOURCE / corpus, tree)
            cached.asked = []
            Memory(tree, embedder=cached).init(adopt=True)
            cached.save()
            questions = load_questions(corpus)
            ranked, _ = memstrata_ranking(tree, questions)
            first = [next((r for r, p in enumerate(paths[:10], 1) if p in set(q["notes"])), 0)
                     for paths, q in zip(ranked, questions)]
            result[corpus] = {"first": first, "texts": len(cached.asked), "tokens": window_tokens(real, cached.asked)}
            out_file.parent.mkdir(parents=True, exist_ok=True)
            out_file.write_text(json.dumps(result))
            sys.stderr.write(f"{variant} {corpus}: {result[corpus]['texts']} texts, {result[corpus]['tokens']} tokens\n")
            shutil.rmtree(tree)  # the trees are ~100 MB each; the ranks are what is kept


def cost(args) -> None:
    from ingest import paragraphs

    from memstrata import Memory
    from memstrata.models.embedder import get_embedder

    real = get_embedder()
    real.embed(["warm up"])
    _, paras = paragraphs(args.vault)
    warm = args.work / "warm"
    shutil.rmtree(warm, ignore_errors=True)
    warm.mkdir(parents=True)
    (warm / "notes").mkdir()
    (warm / "notes" / "a.md").write_text("# A\n\nwarm up the table\n\n## B\n\nand the adopt\n")
    Memory(warm).init(adopt=True)  # LanceDB imported, the table code warm
    costs = {"model": [], "paragraph_tokens": window_tokens(real, paras)}
    for _ in range(args.passes):
        for variant in ["model"] + args.variants:
            real._ids.clear()  # no variant reuses the token ids another counted
            if variant == "model":
                before = cpu()
                real.embed(paras)
                costs["model"].append(cpu() - before)
                continue
            set_variant(variant)
            tree = args.work / variant
            shutil.rmtree(tree, ignore_errors=True)
            shutil.copytree(args.vault, tree, ignore=shutil.ignore_patterns(".git"))
            asked = []
            embed = real.embed
            real.embed = lambda texts, *a, **k: (asked.extend(texts), embed(texts, *a, **k))[1]
            before = cpu()
            try:
                Memory(tree).init(adopt=True)
            finally:
                del real.embed
            costs.setdefault(variant, []).append(cpu() - before)
            costs[f"{variant} tokens"] = window_tokens(real, asked)
            costs[f"{variant} texts"] = len(asked)
            shutil.rmtree(tree)
            sys.stderr.write(f"{variant}: {costs[variant][-1]:.1f} CPU s, model {costs['model'][-1]:.1f}\n")
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "costs.json").write_text(json.dumps(costs, indent=1))
    print(json.dumps(costs, indent=1))


def _paired(a: list[float], b: list[float]) -> tuple[float, float]:
    d = [x - y for x, y in zip(a, b)]
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / max(n - 1, 1))
    return mean, sd / math.sqrt(n)


def table(args) -> None:
    results: dict[str, dict] = {}  # several --trees folders (corpora run apart) merged per variant
    for trees in args.table_trees or [args.trees]:
        for p in sorted(trees.glob("*/result.json")):
            results.setdefault(p.parent.name, {}).update(json.loads(p.read_text()))
    costs = json.loads(args.costs.read_text()) if args.costs and args.costs.exists() else {}
    base = results.get(args.base, {})
    head = "| variant | tokens (vault160) | adopt CPU s | ratio | " + " | ".join(
        f"{c} MRR@10 (diff ± noise) | {c} hit@3" for c in CORPORA) + " |"
    print(head)
    print("|" + " --- |" * (4 + 2 * len(CORPORA)))
    model = sum(costs.get("model", [0])) / max(len(costs.get("model", [])), 1)
    for variant, res in results.items():
        spent = costs.get(variant)
        adopt = sum(spent) / len(spent) if spent else None
        cells = [variant, str(costs.get(f"{variant} tokens", "")),
                 f"{adopt:.1f}" if adopt else "", f"{adopt / model:.2f}x" if adopt and model else ""]
        for c in CORPORA:
            if c not in res or c not in base:
                cells += ["", ""]
                continue
            rr = [1 / f if f else 0.0 for f in res[c]["first"]]
            rb = [1 / f if f else 0.0 for f in base[c]["first"]]
            h3 = [1.0 if 0 < f <= 3 else 0.0 for f in res[c]["first"]]
            h3b = [1.0 if 0 < f <= 3 else 0.0 for f in base[c]["first"]]
            dm, nm = _paired(rr, rb)
            dh, nh = _paired(h3, h3b)
            cells.append(f"{sum(rr) / len(rr):.3f} ({dm:+.3f} ± {nm:.3f})")
            cells.append(f"{sum(h3) / len(h3):.2f} ({dh:+.2f} ± {nh:.2f})")
        print("| " + " | ".join(cells) + " |")
    print(f"\nmodel alone on the paragraphs: {model:.1f} CPU s ({costs.get('paragraph_tokens', '?')} tokens); "
          "tokens embedded per corpus: " + "; ".join(
              f"{v}: " + ", ".join(f"{c} {r[c]['tokens']}" for c in CORPORA if c in r) for v, r in results.items()))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("tokens", "recall", "cost", "table"))
    ap.add_argument("variants", nargs="*")
    ap.add_argument("--trees", type=Path, default=Path("/tmp/chunk0-trees"))
    ap.add_argument("--from", dest="table_trees", type=Path, action="append", help="table: read these --trees folders")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/chunk0-cache"))
    ap.add_argument("--only", action="append")
    ap.add_argument("--vault", type=Path, default=Path("/tmp/vault160"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/chunk0-cost"))
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--costs", type=Path)
    ap.add_argument("--corpora", type=Path, default=Path("/tmp/final-corpora"), help="the notes corpora")
    ap.add_argument("--base", default="whole", help="table: the variant the others are compared with")
    args = ap.parse_intermixed_args(argv)
    os.environ.setdefault("MEMSTRATA_RUNTIME_DIR", "/tmp/chunk0-run")
    {"tokens": tokens, "recall": recall, "cost": cost, "table": table}[args.step](args)


if __name__ == "__main__":
    main()
