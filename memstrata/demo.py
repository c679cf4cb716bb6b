"""The main job on the embedded default: write a few memories into a local tree and recall them."""
from __future__ import annotations

import sys

from memstrata.memory import Memory

SAMPLES = [
    ("We chose PostgreSQL over MongoDB for the alpha project because we need transactions.",
     "Alpha database choice", "projects/alpha", ["database", "decision"], "high"),
    ("The user prefers dark mode in every editor and terminal.", "UI preference", "preferences", ["ui"], "medium"),
    ("Standup moved to 9:30 on Tuesdays and Thursdays from next week.", "Standup time", "meetings", ["schedule"], "low"),
    ("部署流程：先在预发布环境验证，再灰度发布到生产环境。", "部署流程", "projects/alpha", ["部署"], "high"),
]
QUERIES = ["which database did we pick for alpha?", "what colour theme does the user like?", "灰度发布"]


def main(argv: list[str] | None = None) -> int:
    memory = Memory()
    print(f"memory tree: {memory.init()['root']}")
    existing = {e.title for e in memory.list()}
    for body, title, category, tags, importance in SAMPLES:
        if title in existing:
            continue
        result = memory.write(body, title=title, category=category, tags=tags, importance=importance)
        print(f"wrote   {result.path}  [{result.id}]")
    for query in QUERIES:
        answer = memory.recall(query, k=2)
        print(f"\nrecall  {query!r}  (strategy: {answer.strategy})")
        for hit in answer.results:
            data = hit.to_dict()
            print(f"  relevance {data['relevance'] or 0:.2f}  {data['title']}  — {data['snippet'][:70]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
