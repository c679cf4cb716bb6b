"""What the prompt hook injects on an adopted vault: tokens for everyday prompts (must be 0), and for real questions whether the answer's note comes, and how much of it.

    python bench/inject.py --vault /tmp/vault160 --tree /tmp/inject-vault [--reuse]

The vault is copied to --tree and adopted (`mem init --adopt`), unless --reuse finds it adopted.
Each prompt goes through `Memory.autoload(prompt, hot=False)`, the call `mem autoload --hook`
makes for a UserPromptSubmit (no session, so nothing is left out as already injected).
Everyday prompts: bench/everyday.py's FIT, HELD_OUT and LATER. Questions: bench/notes/vault.jsonl,
those whose answer notes are in the vault. Also: what MCP `autoload` gives for a greeting passed as
its context and with no context (a session start), and a few task prompts that are not about the vault.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEMSTRATA_SERVICE", "off")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import everyday  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TASKS = ["Fix the typo in README.md", "run the tests again", "rename the variable to snake_case",
         "add a unit test for the parser", "why is the build failing?", "commit this and push",
         "write a bash script that backs up my home folder", "refactor this function to be shorter"]


def adopt(vault: Path, tree: Path, reuse: bool):
    from memstrata import Memory

    if not (reuse and (tree / ".memstrata").is_dir()):
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(vault, tree)
        Memory(tree).init(adopt=True)
    return Memory(tree)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vault", default="/tmp/vault160")
    ap.add_argument("--tree", default="/tmp/inject-vault")
    ap.add_argument("--questions", default=str(REPO / "bench" / "notes" / "vault.jsonl"))
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--signals", action="store_true", help="print each injected hit's relevance and coverage")
    ap.add_argument("--budget", type=int, default=1500, help="the README's prompt hook recipe: --budget 1500")
    args = ap.parse_args()
    m = adopt(Path(args.vault), Path(args.tree), args.reuse)
    count = m.embedder.count_tokens

    prompts = list(everyday.FIT) + list(everyday.HELD_OUT) + list(everyday.LATER)
    loud = [(p, r.tokens) for p in prompts if (r := m.autoload(p, hot=False, budget=args.budget)).items]
    print(f"everyday prompts: {len(prompts)}, injecting anything: {len(loud)}, tokens injected: "
          f"{sum(t for _, t in loud)} {loud[:5]}")

    questions = [json.loads(x) for x in Path(args.questions).read_text(encoding="utf-8").splitlines() if x.strip()]
    questions = [q for q in questions if any((Path(args.vault) / n).is_file() for n in q["notes"])]
    answered = whole_long = 0
    tokens, answer_tokens, over = [], [], 0
    for q in questions:
        r = m.autoload(q["question"], hot=False, budget=args.budget)
        tokens.append(r.tokens)
        over += count(r.markdown()) > args.budget
        for item in r.items:
            body = m.read(item.entry.id, count_access=False).body
            whole_long += (not item.truncated) and count(body) > 300
        hit = [i for i in r.items if i.entry.path in q["notes"]]
        answered += bool(hit)
        if hit:
            answer_tokens.append(count(hit[0].text))
    n = len(questions)
    print(f"questions with their note in the vault: {n}; answer's note injected: {answered} ({answered / n:.3f}); "
          f"tokens per question: mean {sum(tokens) / n:.0f}, max {max(tokens)}; answer part tokens: mean "
          f"{sum(answer_tokens) / max(1, len(answer_tokens)):.0f}, max {max(answer_tokens, default=0)}; "
          f"whole notes past 300 tokens injected: {whole_long}; blocks past the budget: {over}")

    if args.signals:  # the kept hits' relevance and coverage: what a rule on the bottom of the range would see
        kept = m.state.settings.autoload_min_relevance
        for label, asked in (("question", [(q["question"], q["notes"]) for q in questions]),
                             ("task", [(t, []) for t in TASKS])):
            for text, notes in asked:
                hits = m.recall(text, explain=True, count_access=False).results
                best = max((h.relevance or 0 for h in hits), default=0)
                for h in hits:
                    if (h.relevance or 0) >= kept * best:
                        cover = (h.signals or {}).get("relevance_signals", {}).get("coverage")
                        print(f"signals\t{label}\t{int(h.path in notes)}\t{h.relevance:.4f}\t{cover}\t{h.path}\t{text}")
    for task in TASKS:
        r = m.autoload(task, hot=False, budget=args.budget)
        shown = [(i.entry.path, round(getattr(i, "relevance", None) or -1, 3), i.tokens, i.truncated) for i in r.items]
        print(f"task {task!r}: {r.tokens} tokens {shown}")
    for context in ("hello", "thanks!", "ok", "continue", None):
        r = m.autoload(context)  # MCP autoload: hot list on, the default budget (2,000)
        print(f"MCP autoload context={context!r}: {len(r.items)} memories, {r.tokens} tokens, "
              f"block {count(r.markdown())} tokens / {len(r.markdown())} characters")


if __name__ == "__main__":
    main()
