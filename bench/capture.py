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
Capture throughput: turns per second of the whole capture (files, index, embedding) against the
model alone embedding the same turns' texts once each, and against it embedding the very texts
the index embedded (its chunks); timed only when `uptime`'s load is under 3.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEMSTRATA_SERVICE", "off")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import capture_transcripts as ct  # noqa: E402
import locomo  # noqa: E402


def load_average() -> float:
    return os.getloadavg()[0]


class Counting:
    """The tree's embedder, counting the texts it embeds (what the model alone is timed on)."""

    def __init__(self, m):
        self.texts: list[str] = []
        embedder = m.state.model()
        real = embedder.embed

        def embed(texts, *args, **kwargs):
            self.texts.extend(texts)
            return real(texts, *args, **kwargs)

        embedder.embed = embed
        self.embedder, self.real = embedder, real


def capture(m, agent: str, transcripts) -> None:
    """Capture the transcripts into `m`'s tree.

    STAND-IN until `mem capture` lands on this branch: the transcripts are read here and written as
    session entries in the format of docs/capture.md (one entry per session, one block per turn)."""
    records = []
    for sid, path, cwd in transcripts:
        turns = []
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if agent == "claude-code" and row.get("type") in ("user", "assistant"):
                content = row["message"]["content"]
                text = content if isinstance(content, str) else "\n".join(
                    b["text"] for b in content if b.get("type") == "text")
                turns.append((row["timestamp"], row["type"], text))
            elif agent == "codex" and row.get("type") == "event_msg" and \
                    row["payload"].get("type") in ("user_message", "agent_message"):
                role = "user" if row["payload"]["type"] == "user_message" else "assistant"
                turns.append((row["timestamp"], role, row["payload"]["message"]))
        project = Path(cwd).name
        body = "\n\n".join(f"### {ts} · {role}\n{text}" for ts, role, text in turns) + "\n"
        records.append({"title": f"{project}: {turns[0][2][:80]}", "body": body, "category": f"sessions/{project}",
                        "created": turns[0][0], "tags": ["session", agent, project], "kind": "session",
                        "agent": agent, "session": sid, "project": project, "cwd": cwd, "repo": None,
                        "started": turns[0][0], "ended": turns[-1][0], "turns": len(turns)})
    src = Path(m.root).parent / f"{Path(m.root).name}.sessions.jsonl"
    src.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records))
    m.import_jsonl(src)


def build(agent: str, conv_file: Path, base: Path, reuse: bool, timed: bool) -> tuple:
    """(Memory, {(session, timestamp): dia_id}, timing dict or None)."""
    from memstrata import Memory

    conv = conv_file.stem
    root = base / agent / f"conv{conv}"
    transcripts, where = ct.write(conv_file, agent, base / "transcripts" / agent)
    m = Memory(root)
    if reuse and (root / ".vectors").exists():
        return m, where, None
    m.init()
    m.config_set("secrets", "warn")
    counting = Counting(m) if timed else None
    t = time.perf_counter()
    capture(m, agent, transcripts)
    seconds = time.perf_counter() - t
    if counting is None:
        return m, where, None
    turns = [text for _, turns in ct.sessions(conv_file) for _, _, text, _ in turns]
    t = time.perf_counter()
    counting.real(turns)
    alone = time.perf_counter() - t
    t = time.perf_counter()
    counting.real(counting.texts)
    same = time.perf_counter() - t
    return m, where, {"turns": len(turns), "capture": seconds, "alone": alone, "same": same,
                      "texts": len(counting.texts)}


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
    load = load_average()
    timed = load < 3.0
    table = []
    for kind in kinds:
        rows, folds, timing = [], {}, []
        for f in files:
            lines, questions = locomo.load(f)
            if kind == "import":
                m, _ = locomo.build(base / "import" / f"conv{f.stem}", lines, reuse=True)
                got, _ = locomo.evaluate(m, questions)
                units = questions
            else:
                m, where, timing_one = build(kind, f, base, reuse=True, timed=timed)
                timing += [timing_one] if timing_one else []
                got = evaluate(m, questions, where, f.stem)
                units = unit_questions(m, questions, where, f.stem) if args.loco else None
            rows += got
            if args.loco:
                import fit_ranking as fr

                folds[f.stem] = fr.examples(Path(m.root), units)
            sys.stderr.write(f"{kind} {f.stem}: {len(questions)} questions, recall@10 {mean(got, 'r10'):.3f}\n")
        fused, held, _ = loco(folds) if args.loco and len(folds) > 1 else (None, None, None)
        speed = "not timed (load %.1f)" % load if not timing else (
            "{:.1f} turns/s; model alone {:.2f}x (turn texts), {:.2f}x (the index's {} texts)".format(
                sum(t["turns"] for t in timing) / sum(t["capture"] for t in timing),
                sum(t["alone"] for t in timing) / sum(t["capture"] for t in timing),
                sum(t["same"] for t in timing) / sum(t["capture"] for t in timing), sum(t["texts"] for t in timing)))
        table.append(f"| {kind} | {len(rows)} | {mean(rows, 'r10'):.3f} | "
                     f"{'' if held is None else f'{held:.3f} (fused {fused:.3f})'} | {mean(rows, 'hit10'):.3f} | "
                     f"{mean(rows, 'mrr10'):.3f} | {speed if kind != 'import' else ''} |")
    print("| turns from | questions | recall@10 | recall@10 LOCO | hit@10 | MRR@10 | capture throughput |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(table))


if __name__ == "__main__":
    main()
