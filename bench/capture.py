"""LoCoMo through capture: turn-level recall of conversations captured from agent transcripts.

    python bench/capture.py --reuse DIR            # the five conversations: import, Claude Code, Codex
    python bench/capture.py --reuse DIR --loco     # also leave-one-conversation-out (bench/fit_ranking.py)
    python bench/capture.py --reuse DIR --only 26 --agent codex

Each LoCoMo conversation is written as agent transcripts (bench/capture_transcripts.py: one per
LoCoMo session, speaker_a the user, speaker_b the assistant, "Speaker: text"), captured into a fresh
tree, and its questions (categories 1-4) asked with `recall(q, k=10, min_relevance=0)`. A hit on a
captured turn names its session and the turn's timestamp as the transcript wrote it: that pair is
mapped back to the LoCoMo turn, so recall@10 is turn-level, as bench/locomo.py measures the same
turns imported one entry each (the `import` rows: bench/locomo.py's trees, built in DIR/import).
`--loco` fits the learned ranker on four conversations and measures the fifth, for each of the
three (bench/fit_ranking.py's fit; the shipped weights were fitted on these five imported).
Capture's throughput against the model alone: bench/capture_speed.py.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEMSTRATA_SERVICE", "off")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import capture_transcripts as ct  # noqa: E402
import locomo  # noqa: E402


MEM = str(Path(sys.executable).with_name("mem"))  # this checkout's `mem`


def run_mem(*args, stdin: str | None = None) -> str:
    import subprocess

    done = subprocess.run([MEM, *args], input=stdin, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"mem {' '.join(args)}: {done.stderr.strip()[-500:]}")
    return done.stdout


def capture(root: Path, agent: str, transcripts) -> None:
    """Capture the transcripts into the tree at `root` as the agent's set-up does: Claude Code's
    through `mem capture --hook` fed each transcript's Stop payload (the hook queues it and returns;
    its background capture runs), waited for until nothing is pending; Codex's with `mem capture PATH...`."""
    if agent == "codex":
        run_mem("capture", "--root", str(root), "--json", *[str(path) for _, path, _ in transcripts])
        return
    for sid, path, cwd in transcripts:
        run_mem("capture", "--hook", "--root", str(root), stdin=ct.hook_payload(sid, path, cwd))
    ct.wait_drained(root)


def build(agent: str, conv_file: Path, base: Path) -> tuple:
    """(Memory of the conversation's captured tree, {(session, timestamp): dia_id}), built when missing."""
    from memstrata import Memory

    root = base / agent / f"conv{conv_file.stem}"
    transcripts, where = ct.write(conv_file, agent, base / "transcripts" / agent)
    if not (root / ".vectors").exists():
        run_mem("init", "--root", str(root))
        run_mem("config", "set", "secrets", "warn", "--root", str(root))
        capture(root, agent, transcripts)
    return Memory(root), where


def evaluate(m, questions, where, conv: str, k: int = 10) -> list[dict]:
    """Turn-level recall of each question: a hit's (session, timestamp) is its LoCoMo turn."""
    rows = []
    m.recall("warm up", k=k, count_access=False)
    for q in questions:
        hits = m.recall(q["query"], k=k, min_relevance=0, count_access=False).results
        found = [locomo.turn_id(conv, where[(h.session, h.timestamp)]) if (h.session, h.timestamp) in where
                 else None for h in hits]
        ev = q["evidence"]
        first = next((r for r, i in enumerate(found, 1) if i in ev), None)
        rows.append({"category": q["category"], "r5": len(ev & set(found[:5])) / len(ev),
                     "r10": len(ev & set(found[:10])) / len(ev), "hit10": 1.0 if first else 0.0,
                     "mrr10": 1.0 / first if first else 0.0})
    return rows


def unit_questions(m, questions, where, conv: str) -> list[dict]:
    """The questions with their evidence as the index's row keys (`<session entry id>#<turn>`), for
    bench/fit_ranking.py's features."""
    from memstrata.storage import turns as session_turns

    key = {}
    for e in m.list():
        entry = m.read(e.id, count_access=False)
        if session_turns.is_session(entry):
            for t in session_turns.parse(entry.body)[1]:
                dia = where.get((entry.extra.get("session"), t.timestamp))
                if dia is not None:
                    key[locomo.turn_id(conv, dia)] = f"{entry.id}#{t.number}"
    return [{**q, "evidence": {key[e] for e in q["evidence"] if e in key}} for q in questions]


def loco(folds: dict) -> tuple[float, float, dict]:
    """bench/fit_ranking.py's leave-one-conversation-out: (fused recall@10, ranker recall@10, per conversation)."""
    import numpy as np

    import fit_ranking as fr

    names = list(fr._features())
    fused = np.eye(len(names))[names.index("score")]
    held, base, per = [], [], {}
    for name in folds:
        train = fr.stack([r for other in folds if other != name for r in folds[other]])
        test = fr.stack(folds[name])
        r, b = fr.recall_at_10(test, fr.fit(train)), fr.recall_at_10(test, fused)
        held += list(r)
        base += list(b)
        per[name] = float(r.mean())
    return float(np.mean(base)), float(np.mean(held)), per


def mean(rows, key) -> float:
    return sum(r[key] for r in rows) / max(len(rows), 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(locomo.DATA))
    ap.add_argument("--reuse", required=True, help="folder of the trees and transcripts (built when missing)")
    ap.add_argument("--only", action="append", help="conversation id (repeatable)")
    ap.add_argument("--agent", action="append", choices=ct.AGENTS, help="only this agent's transcripts (repeatable)")
    ap.add_argument("--no-import", action="store_true", help="leave out the `mem import` rows")
    ap.add_argument("--loco", action="store_true", help="also leave-one-conversation-out (fits the ranker)")
    args = ap.parse_args(argv)
    base = Path(args.reuse)
    base.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MEMSTRATA_RUNTIME_DIR", str(base / ".run"))
    files = [f for f in sorted(Path(args.data).glob("*.json")) if not args.only or f.stem in args.only]
    if not files:
        raise SystemExit(f"no conversations in {args.data}")
    kinds = ([] if args.no_import else ["import"]) + (args.agent or list(ct.AGENTS))
    table = []
    for kind in kinds:
        rows, folds = [], {}
        for f in files:
            lines, questions = locomo.load(f)
            if kind == "import":
                m, _ = locomo.build(base / "import" / f"conv{f.stem}", lines, reuse=True)
                got, _ = locomo.evaluate(m, questions)
                units = questions
            else:
                m, where = build(kind, f, base)
                got = evaluate(m, questions, where, f.stem)
                units = unit_questions(m, questions, where, f.stem) if args.loco else None
            rows += got
            if args.loco:
                import fit_ranking as fr

                folds[f.stem] = fr.examples(Path(m.root), units)
            sys.stderr.write(f"{kind} {f.stem}: {len(questions)} questions, recall@10 {mean(got, 'r10'):.3f}\n")
        fused, held, _ = loco(folds) if args.loco and len(folds) > 1 else (None, None, None)
        how = {"import": "`mem import`, one entry per turn (bench/locomo.py)",
               "claude-code": "Claude Code transcripts, `mem capture --hook` (Stop payload)",
               "codex": "Codex rollouts, `mem capture PATH`"}[kind]
        table.append(f"| {how} | {len(rows)} | {mean(rows, 'r10'):.3f} | "
                     f"{'' if held is None else f'{held:.3f} (fused {fused:.3f})'} | {mean(rows, 'hit10'):.3f} | "
                     f"{mean(rows, 'mrr10'):.3f} |")
    print("| turns from | questions | recall@10 | recall@10 LOCO (fused) | hit@10 | MRR@10 |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(table))


if __name__ == "__main__":
    main()
