"""Notes beside captured sessions: do thousands of captured turns drown a user's notes?

    python bench/notes_sessions.py --reuse DIR                 # every notes corpus, alone and with sessions
    python bench/notes_sessions.py --reuse DIR --only vault --conversation 42 --conversation 43

Each notes corpus (bench/notes_corpora.py, /tmp/notes-corpora) is adopted into a tree (bench/notes.py's
build, DIR/<corpus>); a copy of that tree gets two LoCoMo conversations captured into it as Claude
Code sessions through `mem capture --hook` (bench/capture.py: one transcript per LoCoMo session, ~1,300
turns for 42 and 43; `capture_in_vault: true`, so they go to the vault's sessions/ folder), and
the corpus's questions (bench/notes/<corpus>.jsonl) are asked of both with `recall(q, k=10,
min_relevance=0)`. A question is answered at k when one of its notes is among the first k hits (a
turn is never one of its notes). The table gives hit@3, hit@10 and MRR@10 alone and with the
sessions, and the share of the first three hits that are turns.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEMSTRATA_SERVICE", "off")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import capture  # noqa: E402
import capture_transcripts as ct  # noqa: E402
import locomo  # noqa: E402
import notes  # noqa: E402


def with_sessions(alone: Path, tree: Path, conversations: list[Path], transcripts: Path, reuse: bool) -> None:
    """`tree`: a copy of the adopted `alone` tree with the conversations captured into it."""
    from memstrata import Memory

    if reuse and tree.exists():
        return
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(alone, tree, symlinks=True)
    Memory(tree).config_set("capture_in_vault", True)  # the sessions beside the notes, as a user allowing it
    for conv in conversations:
        found, _ = ct.write(conv, "claude-code", transcripts)
        capture.capture(tree, "claude-code", found)


def ranked(tree: Path, questions: list[dict]) -> tuple[list[list[str]], float]:
    """The paths of the first ten hits per question, and the share of the first three that are turns."""
    from memstrata import Memory

    m = Memory(tree)
    m.recall("warm up", count_access=False)
    out, turns, shown = [], 0, 0
    for q in questions:
        hits = m.recall(q["question"], k=10, min_relevance=0, count_access=False).results
        out.append([h.path for h in hits])
        turns += sum(1 for h in hits[:3] if h.turn is not None)
        shown += len(hits[:3])
    return out, turns / max(shown, 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reuse", required=True, help="folder of the trees (built when missing)")
    ap.add_argument("--corpora", default="/tmp/notes-corpora")
    ap.add_argument("--data", default=str(locomo.DATA))
    ap.add_argument("--only", action="append", help="a notes corpus (repeatable; default: every one but vuezh)")
    ap.add_argument("--conversation", action="append", help="LoCoMo conversation captured beside (default 42, 43)")
    args = ap.parse_args(argv)
    notes.CORPORA = Path(args.corpora)
    base = Path(args.reuse)
    base.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MEMSTRATA_RUNTIME_DIR", str(base / ".run"))
    convs = [Path(args.data) / f"{c}.json" for c in (args.conversation or ["42", "43"])]
    names = args.only or sorted(p.stem for p in notes.QUESTIONS.glob("*.jsonl") if p.stem != "vuezh")
    print("| corpus | questions | hit@3 alone | hit@3 with sessions | hit@10 alone / with | MRR@10 alone / with "
          "| turns in the first 3 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        questions = notes.load_questions(name)
        alone = base / name
        notes.build(name, alone, reuse=True, settings={})
        mixed = base / f"{name}+sessions"
        with_sessions(alone, mixed, convs, base / "transcripts", reuse=True)
        a, _ = ranked(alone, questions)
        b, share = ranked(mixed, questions)
        sa, sb = notes.scores(a, questions), notes.scores(b, questions)
        print(f"| {name} | {sa['n']} | {sa['hit3']:.3f} | {sb['hit3']:.3f} | {sa['hit10']:.3f} / {sb['hit10']:.3f} "
              f"| {sa['mrr']:.3f} / {sb['mrr']:.3f} | {share:.3f} |", flush=True)


if __name__ == "__main__":
    main()
