"""Aging without loss: weights, tiers, reversible compression, archive, forgetting.

The rules are scoring's (weight, tiers, lifecycle.plan, review); Aging applies them to
the tree through the one save path (engine/save.py), a few entries per lock-held step, so a
crash leaves each entry as it was or as it should be, never half-changed:

- the original of an entry being compressed is written to `.full/{id}.md` first (atomic),
  then the entry file is rewritten (atomic; moved first when it goes to archived/);
- expiring marks the entry `status: expired` and moves it to the trash in the same step
  (an expired entry still found in the tree after a crash is trashed by the next run);
- compression never changes `updated`, `last_access` or `access_count`.

Compressed bodies are extractive summaries of the original (models/summarize.py, local
model, English and Chinese): L1 key points, L2 one line and tags, L4 a paragraph (and
`summary:` "one sentence | paragraph" in the frontmatter). They are always computed from
the original, never from an already-compressed body (features/compressor.py).
"""
from __future__ import annotations

import math

from memstrata.clock import format_datetime
from memstrata.engine.entries import Entries
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import ChangedOnDisk, InvalidInput, MemstrataError, NotFound
from memstrata.features.access_fold import AccessFold
from memstrata.features.compression import may_shrink
from memstrata.features.compressor import Compressor
from memstrata.features.maintain_report import MaintenanceReport, change_row, purge_row, reported_row
from memstrata.scoring import lifecycle
from memstrata.scoring import weight as weight_rules
from memstrata.scoring.lifecycle import Action
from memstrata.storage import journal, layout, sidecars, trash, tree, usage
from memstrata.storage.entry import Entry
from memstrata.storage.paths import is_archived_path

# maintain writes this many entries per lock-held step (one index update and INDEX.md rewrite each).
MAINTAIN_BATCH = 32


class Aging:
    """Weight, maintain (tiers, compression, archive, expiry, forgetting, purge), decompress."""

    def __init__(self, state: TreeState, entries: Entries, save: SavePath, folds: AccessFold):
        self.state = state
        self.folds = folds  # the access journal's fold, the first step of maintain
        self.entries = entries
        self.save = save
        self.root = state.root
        self.compression = Compressor(state, entries, save)  # compress, its dry run, decompress
        self._use_days: tuple = ()  # the days in use the current maintain counts

    # -- weight ---------------------------------------------------------------------------
    def weight(self, ref: str, update: bool = False, context_correlation: float | None = None) -> dict:
        """An entry's weight with each factor of the formula; `update` stores it in the frontmatter.

        W = importance_factor x 1/(days+1)^0.3 x ln(max(access_count,1)+1) x context_correlation.
        Asking for the weight is not an access. With `context_correlation` (0.5-1.5) that
        value is used (and stored with `update`) instead of the entry's own.
        """
        if context_correlation is not None and not (
                weight_rules.CORRELATION_MIN <= context_correlation <= weight_rules.CORRELATION_MAX):
            raise InvalidInput(f"context correlation {context_correlation} is outside "
                               f"{weight_rules.CORRELATION_MIN}-{weight_rules.CORRELATION_MAX}")
        now = self.state.now()
        entry = self.entries.resolve(ref)
        if update:
            with self.state.lock():
                entry = self.entries.resolve(entry.path)
                new = entry.copy()
                if context_correlation is not None:
                    new.context_correlation = weight_rules.clamp_correlation(context_correlation)
                counted = self.entries.seen(new)  # the reads still in the journal count too
                if context_correlation is not None:  # the one given wins over the journal's last
                    counted.context_correlation = new.context_correlation
                new.weight = round(weight_rules.compute_weight(counted, now), 4)
                if new.weight != entry.weight or new.context_correlation != entry.context_correlation:
                    self.save.save(new, previous=entry)
                return self._weight_info(counted, now, None, stored=True, stored_weight=new.weight)
        return self._weight_info(self.entries.seen(entry), now, context_correlation, stored=False,
                                 stored_weight=entry.weight)

    def _weight_info(self, entry: Entry, now, correlation, stored: bool, stored_weight) -> dict:
        """`entry` as reads show it (the journal's pending reads counted); `stored_weight` its file's."""
        days = weight_rules.weight_days(entry, now)
        corr = weight_rules.clamp_correlation(entry.context_correlation if correlation is None else correlation)
        value = weight_rules.compute_weight(entry, now, corr)
        return {
            "id": entry.id, "title": entry.title, "path": entry.path,
            "weight": round(value, 4),
            "stored_weight": stored_weight,
            "updated": stored,
            "importance": entry.importance, "important": entry.important,
            "importance_label": weight_rules.importance_label(entry),
            "importance_factor": weight_rules.importance_factor(entry),
            "days": days,
            "decay": round(1.0 / (days + 1) ** weight_rules.DECAY_EXPONENT, 4),
            "access_count": entry.access_count,
            "access_term": round(math.log(weight_rules.effective_access_count(entry, now) + 1), 4),
            **({"access_count_believed": believed} if (believed := weight_rules.credible_count(
                entry.access_count, entry.created, now)) < (entry.access_count or 0) else {}),
            "context_correlation": round(corr, 4),
            "last_access": format_datetime(entry.last_access),
            "tier": entry.tier,
        }

    # -- maintain -------------------------------------------------------------------------
    def maintain(self, dry_run: bool = False, progress=None) -> MaintenanceReport:
        """Apply every due lifecycle action (scoring.lifecycle.plan), then tend the trash.

        Per entry, in one lock-held step: retier, compress (original to `.full/` first),
        archive (move to {category}/archived/), expire or forget (to `.trash/`, reported in
        the report's `forgotten`). Archive and forgetting count days in use (storage/usage.py,
        kept up to date here), so a tree nobody opened keeps its entries. Trash items not
        reported before are listed (`reported`) and marked; items reported and past
        trash_retention_days are purged. Idempotent: a second run at the same moment changes
        nothing. With dry_run nothing is written (the model is loaded only for a compression whose
        size only its choice tells: the dry run reports exactly what the real run does).
        `progress(done, total)` is called after each entry.
        """
        tree.require_initialised(self.root)
        now = self.state.now()
        settings = self.state.settings
        report = MaintenanceReport(now=now, dry_run=dry_run, retention_days=settings.trash_retention_days)
        journal_days = journal.days(self.root, now.date())
        if dry_run:  # what the fold would write, not claimed as written
            report.accesses_to_fold = self.folds.accesses_to_fold()
        else:
            report.accesses_folded = self.folds.fold_accesses()
        if not dry_run:
            self.entries.give_ids()  # hand-made files get their id (maintain, sync and writes do; reads never)
        entries = self.entries.list(as_stored=True)
        usable = []
        for entry in entries:
            if not entry.id and dry_run:  # the real run gives it its id first, then plans it like any other
                usable.append(entry.copy(id=f"path:{entry.path}"))
            elif not entry.id:
                report.errors.append({"id": "", "path": entry.path, "error": "entry has no id; run mem doctor"})
            else:
                usable.append(entry)
        days = set(self.entries.days.over(entries, now)) | journal_days
        if not dry_run:
            with self.state.lock():
                usage.record(self.root, days, self.folds.machine())  # the name its journal file has
            report.journal_compacted = self.folds.compact_journal()  # after the days are recorded
        self._use_days = tuple(sorted(days))
        report.days_in_use = len(days)
        planned, leaving = lifecycle.plan_with_cascade(usable, now, settings, use_days=self._use_days)
        if self.state.vault:  # the notes are the user's: only expiry applies (scoring/lifecycle.py)
            planned = {i: kept for i, actions in planned.items() if (kept := lifecycle.for_vault_notes(actions))}
        referrers = lifecycle.referrers([e for e in usable if e.id not in leaving])
        todo = [e for e in usable if e.id in planned or e.status == "expired"]
        if dry_run:
            for done, entry in enumerate(todo, 1):
                row = self._preview(entry, planned.get(entry.id) or lifecycle.stray_expired(entry))
                if row is not None:
                    report.changes.append(row)
                if progress is not None:
                    progress(done, len(todo))
            self.compression.forget_summaries()
        else:
            for start in range(0, len(todo), MAINTAIN_BATCH):
                self._maintain_batch(todo[start:start + MAINTAIN_BATCH], now, referrers, report)
                if progress is not None:
                    progress(min(start + MAINTAIN_BATCH, len(todo)), len(todo))
        order = {e.id: n for n, e in enumerate(todo)}
        report.changes.sort(key=lambda c: order.get(c["id"], len(order)))
        self._tend_trash(report, now, dry_run)
        return report

    def _tend_trash(self, report: MaintenanceReport, now, dry_run: bool) -> None:
        """Report (and mark) trash items never shown before; purge those reported and past retention."""
        settings = self.state.settings
        forgotten_now = {c["new_path"] for c in report.changes}
        items = trash.list_trash(self.root)
        unreported = [i for i in items if i.reported_at is None and i.path not in forgotten_now]
        if unreported and not dry_run:
            with self.state.lock():
                unreported = [i for i in trash.mark_reported(self.root, unreported, now) if i.reported_at]
        report.reported = [reported_row(i, now, settings.trash_retention_days) for i in unreported]
        # counted in days in use, as archive and forgetting: a clock moved ahead (MEMSTRATA_NOW) adds none
        due = [i for i in items if lifecycle.trash_purge_due(i.trashed_at, now, settings, i.reported_at,
                                                             self._use_days)]
        if dry_run:
            report.purged = [purge_row(i, now) for i in due]
        elif due:
            with self.state.lock():
                purged = trash.purge(self.root, self.state.now(), settings, live_ids=set(self.state.catalog.ids()),
                                     use_days=self._use_days)
            report.purged = [purge_row(i, now) for i in purged]

    def _maintain_batch(self, batch: list[Entry], now, referrers: dict[str, set[str]],
                        report: MaintenanceReport) -> None:
        """One lock-held step for a few entries: re-read and re-plan each, write them together.

        Every file is replaced atomically and sidecars are written before the entries that
        point at them, so a crash leaves each entry old or new; if saving fails, the whole
        step is rolled back by the core and reported as errors. The summaries (the slow part)
        are computed before taking the lock, so other writers wait only for the file writes.
        """
        self._warm_summaries(batch, now, referrers)
        with self.state.lock():
            pending: list[tuple[Entry, Entry, list[Action]]] = []
            taken: set[str] = set()
            for planned in batch:
                try:
                    step = self._plan_one(planned, now, referrers)
                    if step is None:
                        continue
                    current, actions = step
                    if any(a.kind in ("expire", "forget") for a in actions):
                        report.changes.append(self._to_trash(current, actions))
                        continue
                    new, actions = self._prepare(current, current.copy(), actions, now)
                    if not actions:
                        continue  # only a compression was due, and it would not have made the body smaller
                    if new.path != current.path and new.path in taken:
                        self._flush(pending, report)  # two entries wanted the same free path: write the first
                        taken.clear()
                        new.path = self._archived_path(current)
                    taken.add(new.path)
                    pending.append((current, new, actions))
                except ChangedOnDisk:
                    report.skipped.append(_skipped(planned))
                except (MemstrataError, OSError) as exc:
                    report.errors.append({"id": planned.id, "path": planned.path,
                                          "error": getattr(exc, "message", None) or str(exc)})
            self._flush(pending, report)
        self.compression.forget_summaries()

    def _warm_summaries(self, batch: list[Entry], now, referrers: dict[str, set[str]]) -> None:
        """Compute the compressed bodies the batch will need, without the lock.

        Keyed by the original text (and layer, tags, id, sidecar path): if an entry changes
        before the lock is taken, the key no longer matches and the locked step recomputes.
        """
        for planned in batch:
            try:
                step = self._plan_one(planned, now, referrers)
                if step is None:
                    continue
                current, actions = step
                if any(a.kind in ("expire", "forget") for a in actions):
                    continue
                layer = next((a.to_value for a in actions if a.kind == "compress"), None)
                if layer is None:
                    continue
                if current.layer == "L0":
                    original, rel = current.body, sidecars.relative_path(current.id, self.root)
                elif sidecars.exists(self.root, current.full_content_file):
                    rel = current.full_content_file
                    original = sidecars.original_body(self.root, rel)
                else:
                    continue
                if may_shrink(original, layer, current, rel, self.state.settings):
                    self.compression.compressed(original, layer, current, rel)
            except (MemstrataError, OSError):
                continue

    def _flush(self, pending: list, report: MaintenanceReport) -> None:
        """Save a batch; an entry an editor saved meanwhile is left as saved (`skipped`, its new
        original in `.full/` removed again) and the rest of the batch saved without it."""
        while pending:
            try:
                self.save.save_many([(new, current) for current, new, _ in pending])
                report.changes.extend(change_row(current, new, actions) for current, new, actions in pending)
            except ChangedOnDisk as exc:
                gone = [p for p in pending if p[0].path in exc.paths or p[1].path in exc.paths] or list(pending)
                for current, new, _ in gone:
                    report.skipped.append(_skipped(current))
                    if current.layer == "L0" and new.full_content_file:  # the original this run wrote for it
                        sidecars.remove(self.root, new.full_content_file)
                pending[:] = [p for p in pending if p not in gone]
                continue
            except (MemstrataError, OSError) as exc:
                message = getattr(exc, "message", None) or str(exc)
                report.errors.extend({"id": current.id, "path": current.path, "error": message}
                                     for current, _, _ in pending)
            break
        pending.clear()

    def _plan_one(self, planned: Entry, now, referrers: dict[str, set[str]]):
        """(entry as it is now, its actions), or None when it moved away or nothing is due any more."""
        try:
            current = self.entries.resolve(planned.path)
        except NotFound:
            return None  # moved or deleted since the plan: the next run sees it where it is
        if current.id != planned.id:
            return None
        if current.status == "expired":
            actions = lifecycle.stray_expired(current)
        else:
            others = referrers.get(current.id, set()) - {current.id}
            actions = lifecycle.plan([current], now, self.state.settings,
                                     referenced_ids={current.id} if others else set(), use_days=self._use_days)
            if self.state.vault:
                actions = lifecycle.for_vault_notes(actions)
        return (current, actions) if actions else None

    def _preview(self, entry: Entry, actions: list[Action]) -> dict:
        """The change row of a dry run (same shape as a real one; nothing computed or written;
        a compression that cannot make the entry smaller is left out, as the real run skips it)."""
        new = entry.copy()
        done = []
        for action in actions:
            if action.kind == "compress" and not self.compression.may_shrink(entry, action.to_value):
                continue
            done.append(action)
            if action.kind == "retier":
                new.tier = action.to_value
            elif action.kind == "compress":
                new.layer = action.to_value
            elif action.kind == "archive":
                new.status = "archived"
                new.path = self._archived_path(entry)
            elif action.kind in ("expire", "forget"):
                new.status = "expired" if action.kind == "expire" else entry.status
                new.path = f"{layout.at(self.root, trash.TRASH_DIR)}/"
        return change_row(entry, new, done) if done else None

    def _to_trash(self, current: Entry, actions: list[Action]) -> dict:
        """Expire or forget: to the trash through the core's delete (audit row, restorable)."""
        action = next(a for a in actions if a.kind in ("expire", "forget"))
        reason = f"{'expired' if action.kind == 'expire' else 'forgotten'}: {action.reason}"
        if action.kind == "expire" and current.status != "expired":
            marked = current.copy(status="expired")
            self.save.save(marked, previous=current)
            current = marked
        item = self.entries.delete(current.path, reason=reason, reported=True)  # the report lists it
        new = current.copy(path=item.path)
        return change_row(current, new, actions, new_path=item.path)

    def _prepare(self, current: Entry, new: Entry, actions: list[Action], now) -> tuple[Entry, list[Action]]:
        """`new` (based on `current`, the file on disk) after retier/compress/archive, and the
        actions done (a compression that would not make the body smaller is skipped); sidecar
        written, entry not."""
        done = []
        for action in actions:
            if action.kind == "retier":
                new.tier = action.to_value
            elif action.kind == "compress":
                if not self.compression.compress(current, new, action.to_value):
                    continue
            elif action.kind == "archive":
                new.status = "archived"
                new.tier = "archive"
                new.path = self._archived_path(current)
            done.append(action)
        new.weight = round(weight_rules.compute_weight(new, now), 4)
        return new, done

    def apply(self, current: Entry, new: Entry, actions: list[Action], now) -> Entry:
        """Carry out lifecycle actions on one entry and save it (caller holds the lock)."""
        new, _ = self._prepare(current, new, actions, now)
        self.save.save(new, previous=current)
        return new

    def _archived_path(self, entry: Entry) -> str:
        if not self.state.settings.archive_moves_files:
            return entry.path  # an adopted note stays where its owner keeps it; its status says archived
        keep = entry.path if is_archived_path(entry.path or "") else None
        return tree.unique_entry_path(self.root, entry.category, entry.title, archived=True, keep=keep)

    # -- decompress (features/compressor.py) -------------------------------------------------
    def decompress(self, ref: str, show: bool = False, restore: bool = False, use: bool = True) -> dict:
        """The full original of a compressed entry (`show`), or put it back (`restore`): Compressor.decompress."""
        return self.compression.decompress(ref, show=show, restore=restore, use=use)

    def full_text_again(self, current: Entry, changed: Entry, note: str | None, undo: list) -> None:
        """The update step of a compressed entry given a new body: Compressor.full_text_again."""
        self.compression.full_text_again(current, changed, note, undo)

    def tier_after_change(self, current: Entry, changed: Entry, note: str | None, undo: list) -> None:
        """The update step: a changed entry's stored tier and weight are those of its new dates (a new
        version of an archived entry is hot at once, not `archive` until the next maintain; recall and
        the hooks read the stored tier)."""
        now = self.state.now()
        changed.tier = lifecycle.tier_now(changed, now, self.state.settings)
        changed.weight = round(weight_rules.compute_weight(changed, now), 4)


def _skipped(entry: Entry) -> dict:
    """The report row of an entry left as an editor saved it while maintain wrote it."""
    return {"id": entry.id, "title": entry.title, "path": entry.path,
            "reason": "changed on disk while maintain wrote it (an editor saving it?): left as saved, "
                      "maintained by the next run"}
