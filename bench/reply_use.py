"""When does a reply count as using a memory it was shown (scoring/reply_use.py)? Found and false alarms.

    python bench/reply_use.py            # one table; no model, no tree (the rule is pure), a few seconds

- bench/life.py's memories: the eight replies written for its recall tasks (an agent following the
  runbook in its own words), and a reply quoting each memory (and each replaced version) as its prompt
  asks, each judged against every memory of the scenario shown at once: found, and other memories
  counted with it.
- LoCoMo (../shared/bench/locomo): every turn as a reply to the turn before it, judged against 30
  turns of *another* conversation (other people, everyday topics: any use found is false) and against 30
  turns of its own conversation's earlier sessions (a speaker who repeats what was said before: a use
  in a sense, reported, not judged).
- Long notes: the long descriptions of the installed packages (their METADATA, 300+ words): 200, 400 and
  1,500 words of one as a reply, 30 others shown whole (another package's README: any use found is
  false), 60 trials each
  (an attacker's review found 29 of 30 such replies counted one before memories were judged by parts).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from memstrata.retrieval.phrases import token_sequence, unit_sequences  # noqa: E402
from memstrata.scoring.reply_use import Asked, shown as ready, used as used_after  # noqa: E402

LOCOMO = HERE.parent.parent / "shared" / "bench" / "locomo"


def used(reply: list, asked: list, memories: dict) -> list[str]:
    """What `reply` used, the user having written `asked` (token sequences) before it."""
    said = Asked()
    said.add(asked)
    return used_after(reply, said, memories)
SHOWN = 30


def life_rows() -> list[tuple[str, str]]:
    import life_capture
    import life_scenario as ls

    memories = {m.key: m for m in ls.MEMORIES}
    texts = {k: [f"{m.title}\n{m.body}"] for k, m in memories.items()}
    for change in ls.CHANGES:
        texts[change.key].append(f"{memories[change.key].title}\n{change.body}")
    shown = {f"{k}#{i}": ready(unit_sequences(*t.split("\n", 1))) for k, versions in texts.items()
             for i, t in enumerate(versions)}
    task_found = sum(1 for _, _, prompt, key, reply in ls.RECALL_TASKS
                     if f"{key}#0" in used(token_sequence(reply), token_sequence(prompt), shown))
    quoted = found = wrong = 0
    for m in ls.MEMORIES:
        for prompt in m.prompts:
            for i, text in enumerate(texts[m.key]):
                got = used(token_sequence(life_capture.reply(text.split("\n", 1)[1], 0)), token_sequence(prompt), shown)
                quoted += 1
                found += f"{m.key}#{i}" in got
                wrong += sum(1 for g in got if g.split("#")[0] != m.key)
    return [("life: replies written for the recall tasks, runbook found", f"{task_found} of {len(ls.RECALL_TASKS)}"),
            ("life: replies quoting a memory, that memory found", f"{found} of {quoted}"),
            ("life: ... other memories counted with it", str(wrong))]


def _turns(path: Path) -> list[list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    sessions, n = [], 1
    while f"session_{n}" in data:
        sessions.append([f"{t['speaker']}: {t['text']}" for t in data[f"session_{n}"]])
        n += 1
    return sessions


def locomo_rows(seed: int = 7) -> list[tuple[str, str]]:
    files = sorted(LOCOMO.glob("*.json"))
    if not files:
        return [("LoCoMo", f"not found at {LOCOMO}")]
    rng = random.Random(seed)
    convs = {f.stem: _turns(f) for f in files}
    replies = other_hits = own_hits = own_judged = 0
    for name, sessions in convs.items():
        others = [t for n, s in convs.items() if n != name for sess in s for t in sess]
        for k, session in enumerate(sessions):
            earlier = [t for s in sessions[:k] for t in s]
            for asked, reply in zip(session, session[1:]):
                replies += 1
                shown = {str(i): ready(unit_sequences("", t)) for i, t in enumerate(rng.sample(others, SHOWN))}
                other_hits += bool(used(token_sequence(reply), token_sequence(asked), shown))
                if len(earlier) >= SHOWN:
                    own_judged += 1
                    shown = {str(i): ready(unit_sequences("", t)) for i, t in enumerate(rng.sample(earlier, SHOWN))}
                    own_hits += bool(used(token_sequence(reply), token_sequence(asked), shown))
    return [(f"LoCoMo: turns as replies, {SHOWN} turns of another conversation shown: any counted (false)",
             f"{other_hits} of {replies} ({other_hits / replies:.4f})"),
            (f"LoCoMo: ... {SHOWN} earlier turns of the same conversation shown: any counted",
             f"{own_hits} of {own_judged} ({own_hits / max(own_judged, 1):.4f})")]


def long_note_rows(seed: int = 3, trials: int = 60) -> list[tuple[str, str]]:
    import glob
    import sysconfig

    docs = {}
    for path in glob.glob(str(Path(sysconfig.get_paths()["purelib"]) / "*.dist-info" / "METADATA")):
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
        if len(body.split()) > 300:
            docs[Path(path).parent.name] = body
    long = [n for n in sorted(docs) if len(docs[n].split()) > 1700]
    if len(docs) < SHOWN + 1 or not long:
        return [("long notes", f"too few package descriptions here ({len(docs)})")]
    memories = {n: ready(unit_sequences("", body)) for n, body in docs.items()}
    rows = []
    for length in (200, 400, 1500):
        rng = random.Random(seed)
        pairs = counted = replies_with = 0
        for _ in range(trials):
            name = rng.choice(long)
            words = docs[name].split()
            start = rng.randrange(0, len(words) - length)
            reply = token_sequence(" ".join(words[start:start + length]))
            shown = {n: memories[n] for n in rng.sample([n for n in sorted(docs) if n != name], SHOWN)}
            got = used(reply, [], shown)
            pairs, counted, replies_with = pairs + SHOWN, counted + len(got), replies_with + bool(got)
        rows.append((f"long notes: {length:,} words of a package README as a reply, {SHOWN} other READMEs shown "
                     f"({len(docs)} READMEs): counted (false)", f"{counted} of {pairs:,} pairs ({counted / pairs:.4f}); "
                     f"{replies_with} of {trials} replies counted one"))
    return rows


def main(argv=None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    rows = life_rows() + locomo_rows() + long_note_rows()
    print("| measure | value |\n| --- | --- |\n" + "\n".join(f"| {a} | {b} |" for a, b in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
