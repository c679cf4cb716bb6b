"""The Markdown table of bench/import_variants.py: per variant, what an import costs and every recall figure with its paired noise."""
from __future__ import annotations

import numpy as np

# (benchmark, its index key in the results, its recall figures)
BENCHES = [
    ("LoCoMo", "locomo_index", [("locomo_r10", "R@10"), ("locomo_loco_r10", "LOCO R@10")]),
    ("til", "til_index", [("til_hit1", "hit@1"), ("til_hit3", "hit@3"), ("til_mrr", "MRR")]),
    ("rustbook", "rustbook_index", [("rustbook_hit1", "hit@1"), ("rustbook_hit3", "hit@3"), ("rustbook_mrr", "MRR")]),
    ("vuezh", "vuezh_index", [("vuezh_hit1", "hit@1"), ("vuezh_hit3", "hit@3"), ("vuezh_mrr", "MRR")]),
    ("vault", "vault_index", [("vault_hit1", "hit@1"), ("vault_hit3", "hit@3"), ("vault_mrr", "MRR")]),
    ("zh passages", "zh_index", [("zh_hit1", "hit@1"), ("zh_hit5", "hit@5"), ("zh_mrr", "MRR")]),
    ("ingest EN", "passages_en_index", [("passages_en_r5", "R@5")]),
    ("ingest ZH", "passages_zh_index", [("passages_zh_r5", "R@5")]),
]


def bootstrap_std(values, n=1000, seed=3) -> float:
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return 0.0
    idx = np.random.default_rng(seed).integers(0, len(v), (n, len(v)))
    return float(v[idx].mean(1).std())


def same_index(results: dict, base: str, v: str, key: str) -> bool:
    """Whether variant `v` embedded exactly the texts `base` did for one benchmark (hash of the table's rows)."""
    a, b = results[base].get(key), results[v].get(key)
    return bool(a and b and a["hash"] == b["hash"])


def verdicts(results: dict, names: list[str]) -> dict[str, str]:
    """Per variant: "yes" (every figure of the first variant measured and none below its mean by
    more than its std), "no", or "not all measured"."""
    base = results[names[0]]
    out = {}
    for v in names:
        dropped = missing = False
        for _, _, figures in BENCHES:
            for key, _ in figures:
                if key not in base:
                    continue
                if key not in results[v]:
                    missing = True
                elif np.mean(results[v][key]) - np.mean(base[key]) < -bootstrap_std(base[key]):
                    dropped = True
        out[v] = "no" if dropped else "not all measured" if missing else "yes"
    return out


def best_speed(results: dict, names: list[str]) -> str | None:
    """The variant importing the most LoCoMo turns per CPU second among those whose every figure holds."""
    ok = verdicts(results, names)
    held = [v for v in names if ok[v] == "yes" and "cpu" in (results[v].get("import") or {})]
    if not held:
        return None
    return max(held, key=lambda v: results[v]["import"]["turns"] / results[v]["import"]["cpu"])


def table(results: dict, order: list[str]) -> str:
    names = [v for v in order if v in results]
    if not names:
        return "(nothing measured)"
    base = results[names[0]]
    lines = ["| figure | " + " | ".join(names) + " |", "|" + " --- |" * (len(names) + 1)]

    def row(label, cells):
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    speed = {v: results[v].get("import") for v in names}
    timed = {v: speed[v] if speed[v] and "cpu" in speed[v] else None for v in names}
    row("LoCoMo import: vector rows / turn", [_per(speed[v]["rows"], speed[v]["turns"]) if speed[v] else ""
                                             for v in names])
    row("LoCoMo import: tokens / turn", [_per(results[v]["tokens"], speed[v]["turns"], 0)
                                         if speed[v] and results[v].get("tokens") else "" for v in names])
    row("LoCoMo import: CPU s / turn (5 `mem import` processes, service off)",
        [f"{1000 * timed[v]['cpu'] / timed[v]['turns']:.1f} ms ({timed[v]['cpu']:.0f} s)" if timed[v]
         else "not timed" if speed[v] else "" for v in names])
    row("LoCoMo import: turns per CPU s", [f"{timed[v]['turns'] / timed[v]['cpu']:.1f}" if timed[v] else ""
                                          for v in names])
    for bench, index_key, figures in BENCHES:
        if not any(k in results[v] for v in names for k, _ in figures):
            continue
        row(f"**{bench}**: texts, tokens / entry (index)", [_index_cell(results, names[0], v, index_key)
                                                            for v in names])
        for key, label in figures:
            if any(key in results[v] for v in names):
                row(f"{bench} {label}", [_figure_cell(results, names[0], v, key, index_key) for v in names])
    ok = verdicts(results, names)
    row("every figure within its std of the first column", [ok[v] for v in names])
    best = best_speed(results, names)
    if best:
        s = results[best]["import"]
        lines.append(f"\nBest speed at no recall loss on any benchmark: **{best}**, "
                     f"{s['turns'] / s['cpu']:.1f} LoCoMo turns per CPU s.")
    return "\n".join(lines)


def _per(counts: dict, n: int, digits: int = 2) -> str:
    per = {k: c / n for k, c in sorted(counts.items())}
    return f"{sum(per.values()):.{digits}f} (" + ", ".join(f"{k} {x:.{digits}f}" for k, x in per.items()) + ")"


def _index_cell(results: dict, first: str, v: str, key: str) -> str:
    idx = results[v].get(key)
    if not idx:
        return ""
    n = max(idx["entries"], 1)
    cell = f"{sum(idx['rows'].values()) / n:.2f} rows"
    if "tokens" in idx:
        cell += f", {idx['embedded_texts'] / n:.2f} texts, {idx['tokens'] / n:.0f} tok"
    if v != first and same_index(results, first, v, key):
        cell += ", identical index"
    return cell + f" ({idx['hash'][:8]})"


def _figure_cell(results: dict, first: str, v: str, key: str, index_key: str) -> str:
    vals, base = results[v].get(key), results[first].get(key)
    if vals is None:
        return ""
    mean = float(np.mean(vals))
    cell = f"{mean:.3f} ±{bootstrap_std(vals):.3f}"
    if v == first or base is None:
        return cell
    d = mean - float(np.mean(base))
    paired = f" (paired ±{bootstrap_std(np.subtract(vals, base)):.3f})" if len(vals) == len(base) else ""
    if same_index(results, first, v, index_key):
        paired += " identical index"
    return cell + (f" **Δ{d:+.3f}**" if d < -bootstrap_std(base) else f" Δ{d:+.3f}") + paired
