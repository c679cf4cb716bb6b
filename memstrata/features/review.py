"""Review tracking: pending_review -> reviewing -> reviewed -> mastered, on the schedule of scoring.review."""
from __future__ import annotations

from datetime import datetime

from memstrata.clock import format_datetime
from memstrata.engine.entries import Entries
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.features.aging import Aging
from memstrata.scoring import review as review_rules
from memstrata.scoring import tiers
from memstrata.scoring.access import touched
from memstrata.scoring.lifecycle import Action
from memstrata.storage.entry import Entry

# Review marks that count as an access (the entry was looked at); pending_review only schedules.
REVIEW_ACCESS = ("reviewing", "reviewed", "mastered")


class Review:
    """review_mark / review_list / review_due / review_stats; mastered entries are archived by aging."""

    def __init__(self, state: TreeState, entries: Entries, save: SavePath, aging: Aging):
        self.state = state
        self.entries = entries
        self.save = save
        self.aging = aging

    def review_mark(self, ref: str, status: str) -> dict:
        """Set an entry's review status (scoring.review.mark_review); mastered entries go to the archive.

        reviewing, reviewed and mastered count as an access; pending_review only schedules.
        """
        status = review_rules.normalise_review_status(status)
        with self.state.lock():
            current = self.entries.resolve(ref)
            now = self.state.now()
            changes = review_rules.mark_review(current, status, now)
            archive = changes.pop(review_rules.ARCHIVE_FLAG, False)
            new = current.copy(**changes)
            if status in REVIEW_ACCESS:
                new = touched(new, now, self.state.settings)
            if archive:
                actions = []
                if new.tier != "archive":
                    actions.append(Action(new.id, "retier", new.tier, "archive", "mastered"))
                if tiers.layer_depth(new.layer) < tiers.layer_depth("L4"):
                    actions.append(Action(new.id, "compress", new.layer, "L4", "mastered"))
                if new.status == "active":
                    actions.append(Action(new.id, "archive", "active", "archived", "mastered"))
                new = self.aging.apply(current, new, actions, now)
            else:
                self.save.save(new, previous=current)
        return {"id": new.id, "title": new.title, "path": new.path, "review_status": new.review_status,
                "review_count": new.review_count, "last_reviewed": format_datetime(new.last_reviewed),
                "next_review": format_datetime(new.next_review), "archived": bool(archive),
                "status": new.status, "tier": new.tier, "layer": new.layer}

    def review_list(self, status: str | None = None) -> list[Entry]:
        """Entries with this review status (any tracked status when None), by next review."""
        wanted = review_rules.normalise_review_status(status) if status else None
        hits = [e for e in self.entries.list() if e.review_status is not None
                and (wanted is None or e.review_status == wanted)]
        far = datetime.max.replace(tzinfo=self.state.now().tzinfo)
        return sorted(hits, key=lambda e: (e.next_review or far, e.id))

    def review_due(self) -> list[Entry]:
        """Entries due for review now, most overdue first."""
        return review_rules.due(self.entries.list(), self.state.now())

    def review_stats(self) -> dict:
        """Counts per review status, and how many are due now."""
        entries = self.entries.list()
        counts = review_rules.stats(entries)
        return {"statuses": counts, "tracked": sum(counts.values()),
                "due": len(review_rules.due(entries, self.state.now()))}
