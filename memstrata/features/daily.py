"""Daily notes: one entry per day, daily/YYYY-MM-DD.md, appended to in "## HH:MM" sections."""
from __future__ import annotations

from memstrata.clock import parse_datetime, to_local
from memstrata.engine.entries import Entries
from memstrata.engine.inputs import clean_body
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import InvalidInput
from memstrata.features.shared import SharedSpace
from memstrata.results import WriteResult
from memstrata.storage import tree


class DailyNotes:
    """`daily(text)`: append to today's note (created on first use)."""

    def __init__(self, state: TreeState, entries: Entries, save: SavePath, shared: SharedSpace):
        self.state = state
        self.entries = entries
        self.save = save
        self.shared = shared
        self.root = state.root

    def daily(self, text: str, *, day=None, share: bool = False) -> WriteResult:
        """Append `text` to today's daily note daily/YYYY-MM-DD.md (created on first use).

        Each append is a "## HH:MM" section; the day and time are the caller's local ones (its TZ).
        An append is not an edit: it goes through the save path without making a new version,
        and skips the duplicate checks of a new write.
        """
        text = clean_body(text).strip()
        if not text:
            raise InvalidInput("a daily note needs some text")
        warnings = self.save.check_fields({"body": text})
        now = self.state.now()
        local = to_local(now)  # the caller's zone, also through the warm service (its TZ is not the caller's)
        if day is None:
            day_text = local.strftime("%Y-%m-%d")
        else:
            day_text = parse_datetime(day).strftime("%Y-%m-%d")
        block = f"## {local.strftime('%H:%M')}\n\n{text}\n"
        category = tree.top_level_spelling(self.root, "daily")  # an adopted vault's `Daily/`
        path = f"{category}/{day_text}.md"
        self.entries.require_tree()
        with self.state.lock():
            if (self.root / path).is_file():
                current = self.entries.resolve(path)
                body = current.body.rstrip("\n")
                changed = current.copy(body=(body + "\n\n" if body else "") + block, updated=now)
                self.save.save(changed, previous=current)
                result = WriteResult(id=changed.id, path=changed.path, action="appended", version=changed.version,
                                     message=f"appended to {changed.path}", warnings=warnings)
            else:
                result = self.entries.write(block, title=day_text, category=category, tags=["daily"], force=True)
                result.message = f"started {result.path}"
                if result.path != path:
                    result.warnings.append(f"daily note written at {result.path}")
        return self.shared.shared_result(result) if share else result
