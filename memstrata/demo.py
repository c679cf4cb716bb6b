"""The main job on the embedded default: write a few memories into a local tree and recall them."""
from __future__ import annotations

import os
import sys

from memstrata.memory import Memory

SAMPLES = [
    ("We chose PostgreSQL over MongoDB for the alpha project because we need transactions.",
     "Alpha database choice", "projects/alpha", ["database", "decision"], "high"),
    ("The user prefers dark mode in every editor and terminal.", "UI preference", "preferences", ["ui"], "medium"),
    ("Standup moved to 9:30 on Tuesdays and Thursdays from next week.", "Standup time", "meetings", ["schedule"], "low"),
    ("部署流程：先在预发布环境验证，再灰度发布到生产环境。", "部署流程", "projects/alpha", ["部署"], "high"),
]
# the last question has no answer among the samples: the cut-off answers it with nothing
QUERIES = ["which database did we pick for alpha?", "what colour theme does the user like?", "灰度发布",
           "what is the capital of France?"]
# Hits less likely than this to answer are not shown (as `--min-relevance 0.2` does): by default
# recall keeps a weak tail under a clear answer (down to recall_relative_relevance x the best, as
# answers ranked low are often real ones), which in a four-note tree is a note on another subject
# (the deployment note at 0.15 under the database answer).
DEMO_MIN_RELEVANCE = 0.2


def main(argv: list[str] | None = None) -> int:
    memory = Memory()
    root = memory.init()["root"]
    print(f"memory tree: {root}")
    existing = {e.title for e in memory.list()}
    for body, title, category, tags, importance in SAMPLES:
        if title in existing:
            continue
        result = memory.write(body, title=title, category=category, tags=tags, importance=importance)
        print(f"wrote   {result.path}  [{result.id}]")
    if all(sample[1] in existing for sample in SAMPLES):
        print(f"the {len(SAMPLES)} sample memories are already there (written by an earlier run): nothing written")
    for query in QUERIES:
        answer = memory.recall(query, k=2, min_relevance=DEMO_MIN_RELEVANCE, count_access=False)
        print(f"\nrecall  {query!r}  (strategy: {answer.strategy})")
        for hit in answer.results:
            data = hit.to_dict()
            print(f"  relevance {data['relevance'] or 0:.2f}  {data['title']}  — {data['snippet'][:70]}")
        if not answer.results:
            print("  nothing relevant: no memory is likely to answer it")
    shown = os.path.relpath(root)
    shown = shown if shown.startswith("..") else f"./{shown}"
    default = memory.settings.recall_min_relevance
    print(f"\nrelevance is the likelihood (0-1) that a memory answers; this demo shows hits of {DEMO_MIN_RELEVANCE} or "
          f"more (--min-relevance {DEMO_MIN_RELEVANCE}); `mem recall` by default answers nothing when its best hit is "
          f"under {default:g} (recall_min_relevance) and keeps a weak tail under a clear answer.")
    print("Try it yourself:\n  . .venv/bin/activate\n"
          f"  mem recall \"which database did we pick for alpha?\" --root {shown}\n"
          f"  mem write \"Releases go out on Fridays\" --title \"Release day\" --category meetings --root {shown}\n"
          f"  mem list --root {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
