"""Capture: transcripts in, session entries out, through the one save path (docs/capture.md)."""
from __future__ import annotations

import os
import time
from pathlib import Path

from memstrata.capture import plain, spool
from memstrata.capture.plan import SessionIndex, cleaner, plan
from memstrata.capture.project import opted_out, project_of
from memstrata.capture.reading import read_file, unchanged
from memstrata.capture.report import CaptureReport
from memstrata.capture.state import CaptureState
from memstrata.engine.entries import Entries
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import InvalidInput, Locked, MemstrataError, NotFound, SecretDetected

BATCH_ENTRIES = 64            # session entries saved (and embedded together) per batch
BATCH_BYTES = 4 * 1024 * 1024  # ... or this much session text, whichever comes first
LOCK_WAIT = 300.0             # seconds `mem capture PATH` waits for a capture already running (a hook's)
DRAIN_ROUNDS = 20             # a drain takes the notices that came while it ran, this many times at most


class Capture:
    """mem capture: paths, the agents' own folders, the notices hooks leave, forget, status."""

    def __init__(self, state: TreeState, entries: Entries, save: SavePath, aging, uses=None):
        self.state = state
        self.entries = entries
        self.save = save
        self.aging = aging
        self.uses = uses  # [(session, replies_of(...))] -> the memories the replies used (features/reply_use.py)
        self.root = state.root

    # -- what a user asks for ------------------------------------------------------------------
    def capture(self, paths, agent: str | None = None, progress=None) -> dict:
        """Capture the transcripts at `paths` (files, or folders of *.jsonl); what is new only."""
        from memstrata.capture.detect import AGENTS

        self._require()
        if agent is not None and agent not in AGENTS:
            raise InvalidInput(f"--agent must be one of {', '.join(AGENTS)}, not {agent!r}")
        files = []
        for given in paths:
            path = Path(os.path.expanduser(str(given)))
            if path.is_dir():
                files += [p for p in sorted(path.rglob("*.jsonl")) if "subagents" not in p.parts]
            elif path.exists():
                files.append(path)
            else:
                raise NotFound(f"no transcript at {path}")
        return self._locked_run([{"path": str(p), "agent": agent} for p in files], progress)

    def capture_agent(self, which: str, since=None, progress=None) -> dict:
        """Capture every transcript of an agent on this machine: `codex` ($CODEX_HOME, else ~/.codex:
        sessions/ and archived_sessions/) or `claude` ($CLAUDE_CONFIG_DIR, else ~/.claude: projects/),
        those changed on or after `since` (a date) only."""
        from memstrata.capture.agents import agent_files

        self._require()
        files = agent_files(which, since)
        return self._locked_run([{"path": str(p), "agent": agent} for p, agent in files], progress)

    def queue(self, notice: dict) -> dict:
        """Leave a hook's notice for the next capture (what `mem capture --hook` does)."""
        self._require()
        return {"queued": spool.put(self.root, notice)}

    def drain(self, progress=None) -> dict:
        """Capture what the notices the hooks left name; at once when another capture runs (it takes
        them: it looks again for notices after it lets go of the lock)."""
        try:
            self._require()
        except InvalidInput as exc:  # the hooks' captures are refused: `mem capture --status` says why
            report = CaptureReport()
            report.error(str(self.root), exc.message)
            CaptureState(self.root).write_last(report.finish())
            raise
        report = CaptureReport()
        lock = spool.CaptureLock(self.root)
        seen: set = set()
        for _ in range(DRAIN_ROUNDS):
            if not lock.acquire():
                report.busy = True
                break
            try:
                notices = [n for n in spool.pending(self.root) if (n[0], n[1]) not in seen]
                seen.update((n[0], n[1]) for n in notices)
                if notices:
                    self._run([_item(n) for n in notices], report, progress)
            finally:
                lock.release()
            if not notices or not [n for n in spool.pending(self.root) if (n[0], n[1]) not in seen]:
                break
        return report.finish()

    def forget(self, ref: str, purge: bool = False) -> dict:
        from memstrata.capture.privacy import forget

        self.entries.require_tree()
        return forget(self, ref, purge=purge)

    def status(self) -> dict:
        self.entries.require_tree()
        cache = CaptureState(self.root)
        s = self.state.settings
        return {"pending": len(spool.pending(self.root)), "transcripts_read": len(cache.files),
                "forgotten": len(cache.forgotten), "last": cache.last(), "category": s.capture_category,
                "team_sync": s.capture_team_sync, "exclude": s.capture_exclude, "vault": self.state.vault,
                "allowed": not self.state.vault or s.capture_in_vault}

    # -- the run -----------------------------------------------------------------------------
    def _require(self) -> None:
        self.entries.require_tree()
        if self.state.vault and not self.state.settings.capture_in_vault:
            raise InvalidInput(
                f"{self.root} is an adopted vault (your notes): captured sessions would fill it, so capture is "
                "off here. Capture into a tree of its own (`mem init --root ~/memory-sessions`, then "
                "`mem capture --root ~/memory-sessions ...` or MEMSTRATA_HOME), or allow it: "
                f"`mem config set capture_in_vault true --root {self.root}` (sessions go to the capture_category folder)")

    def _locked_run(self, items: list[dict], progress) -> dict:
        self._require()
        lock = spool.CaptureLock(self.root, wait=LOCK_WAIT)
        if not lock.acquire():
            raise Locked(f"another capture of {self.root} is running (waited {LOCK_WAIT:.0f}s); try again later")
        report = CaptureReport()
        try:
            self._run(items, report, progress)
        finally:
            lock.release()
        if spool.pending(self.root):  # hooks that fired meanwhile found this run holding the lock: their turn
            self.drain()
        return report.finish()

    def _run(self, items: list[dict], report: CaptureReport, progress) -> None:
        """Read each transcript, plan the changes, save them BATCH_ENTRIES at a time (caller holds the capture lock)."""
        started = time.monotonic()
        settings = self.state.settings
        cache = CaptureState(self.root)
        index = SessionIndex(self.root, self.state.catalog, settings.capture_category)
        batch = _Batch()
        clean = cleaner(settings.capture_turn_max_chars)
        total = len(items)
        if progress and total:
            progress(0, total)
        try:
            for done, item in enumerate(items, 1):
                self._one(item, cache, index, batch, report, clean)
                if batch.full():
                    self._flush(batch, cache, report, progress)
                    batch = _Batch()
                if progress:
                    progress(done, total)
            self._flush(batch, cache, report, progress)
        finally:
            cache.save()
            report.seconds += time.monotonic() - started
            cache.write_last(report.finish(), report.used[report.uses_written:])  # a drain's rounds share a report
            report.uses_written = len(report.used)

    def _one(self, item: dict, cache: CaptureState, index: SessionIndex, batch: "_Batch", report: CaptureReport,
             clean) -> None:
        """Read one transcript and plan what it changes."""
        notice = item.get("notice")
        path = item.get("path")
        if not path and item.get("codex_thread"):
            from memstrata.capture.agents import codex_rollout

            path = codex_rollout(str(item["codex_thread"]))
            if path is None:
                report.file_skipped(str(item["codex_thread"]), "no Codex rollout of this thread found")
                batch.done(notice)
                return
        path = os.path.realpath(os.path.expanduser(str(path)))
        cached = cache.get(path)
        if unchanged(path, cached):
            report.unchanged += 1
            batch.done(notice)
            return
        try:
            read = read_file(path, cached, item.get("agent"), item.get("session"), item.get("cwd"))
        except OSError as exc:
            report.error(path, exc.strerror or str(exc))
            batch.done(notice)
            return
        except ValueError as exc:
            report.file_skipped(path, f"not a transcript ({exc})")
            batch.done(notice)
            return
        report.read(read)
        record = read.record
        reason = ("a sub-agent's transcript (its parent session holds what matters)" if record.get("parent")
                  else opted_out(record.get("cwd"), self.state.settings.capture_exclude))
        if reason:
            report.file_skipped(path, reason)
            batch.file(path, record, notice)
            return
        project = project_of(record.get("cwd"))
        category = f"{self.state.settings.capture_category}/{project.name}"
        for session, turns in read.groups.items():
            if cache.is_forgotten(read.agent, session):
                report.file_skipped(path, f"session {session} was forgotten (mem capture --forget)")
                continue
            change = plan(index, agent=read.agent, session=session, turns=turns, project=project, full=read.full,
                          unique=read.agent != plain.AGENT, clean=clean, limit=self.state.settings.max_entry_bytes,
                          category=category, now=self.state.now())
            report.planned(change)
            batch.add(change)
            if change.replies:
                batch.replies.append((session, change.replies))
            if not change.changes and turns:
                batch.check.extend(change.unchanged)  # read again and found in: their index rows are checked
        batch.file(path, record, notice)

    def _flush(self, batch: "_Batch", cache: CaptureState, report: CaptureReport, progress=None) -> None:
        """Save the batch's entries through the save path (under the tree lock), then note what was read."""
        failed: set = set()
        if batch.entries or batch.check:
            self.save.prepare()
            with self.state.lock():
                if not report.temps_cleaned:
                    from memstrata.doctor.checks import remove_dead_writers_temps

                    remove_dead_writers_temps(self.root)  # the copies a killed capture left
                    report.temps_cleaned = True
                changes, undo = [], []
                for entry, previous, session in batch.entries.values():
                    try:
                        report.warnings.extend(self._checked(entry))
                    except MemstrataError as exc:
                        report.error(session, exc.message)
                        failed.add(session)
                        continue
                    self._place(entry, previous, changes, undo, {e.path for e, _ in changes})
                if changes:
                    counts = self.save.save_many(changes, undo=undo, index_progress=progress)  # (chunks embedded)
                    report.saved(changes, counts, self.save.index.last_error)
                if batch.check:  # read again, nothing new: what a killed capture may have left undone
                    from memstrata.features.import_index import index_missing

                    report.reindexed += index_missing(self.state, [e for e in batch.check if e.path])
                    self.save.write_indexes(list({e.category for e in batch.check}))
        for path, record, notice in batch.files:
            if path and not failed & set(record.get("sessions") or []):
                cache.put(path, record)
            if notice:
                spool.done(*notice)
        cache.save()
        replies = [(s, turns) for s, turns in batch.replies if s not in failed]
        if replies and self.uses is not None:
            try:
                report.used += self.uses(replies)
            except Exception as exc:  # noqa: BLE001 - the sessions are saved: uses left uncounted never fail them
                report.warnings.append(f"the replies' uses of memories were not counted: {type(exc).__name__}: {exc}"[:300])

    def _checked(self, entry) -> list[str]:
        """The secret guard over the whole entry; its texts are redacted already, so a finding left is in
        what the agent wrote around them (a cwd, a title): redacted as it is shown, and checked again."""
        try:
            return self.save.check_entry(entry)
        except SecretDetected:
            from memstrata.storage.secrets import redact, redact_value

            entry.title = redact(entry.title)
            entry.extra = {k: redact_value(k, v) for k, v in entry.extra.items()}
            return self.save.check_entry(entry)

    def _place(self, entry, previous, changes: list, undo: list, claimed: set) -> None:
        """Where the entry goes: a new one gets its file name, a compressed or archived one takes its
        full text back and comes back from archived/ (its session goes on)."""
        from memstrata.capture.sessions import file_name

        if previous is not None and previous.is_compressed:
            self.aging.full_text_again(previous, entry, None, undo)
        if previous is not None and previous.status == "archived":
            entry.status, entry.tier, entry.path = "active", "hot", None
        if entry.path is None or previous is None:
            entry.path = self._free_path(entry.category, file_name(entry.extra.get("started"), entry.agent or "agent",
                                                                   str(entry.extra.get("session")),
                                                                   int(entry.extra.get("part") or 1)), claimed)
        changes.append((entry, previous))

    def _free_path(self, category: str, name: str, claimed: set) -> str:
        from memstrata.storage.paths import inside_root, validate_category

        category = validate_category(category, top=self.state.vault)
        stem = name[:-3]
        candidate, n = f"{category}/{name}", 2
        while candidate in claimed or os.path.lexists(inside_root(self.root, candidate)):
            candidate, n = f"{category}/{stem}-{n}.md", n + 1
        return candidate


def _item(notice: tuple) -> dict:
    path, data, payload = notice
    item = {k: payload.get(k) for k in ("path", "session", "cwd", "agent", "codex_thread")}
    item["notice"] = (path, data)
    return item


class _Batch:
    """The session entries of a batch (by id: a session changed twice in a run is saved once, from
    its file as it was), the transcripts they came from, and entries whose index rows are checked."""

    def __init__(self):
        self.entries: dict[str, tuple] = {}
        self.files: list[tuple] = []
        self.check: list = []
        self.replies: list[tuple] = []  # (session, its new replies): what they used is counted once saved
        self.bytes = 0

    def add(self, change) -> None:
        for entry, previous in change.changes:
            held = self.entries.get(entry.id)
            self.entries[entry.id] = (entry, held[1] if held else previous, change.session)
            self.bytes += len(entry.body)

    def file(self, path: str, record: dict, notice) -> None:
        self.files.append((path, record, notice))

    def done(self, notice) -> None:
        if notice:
            self.files.append((None, {}, notice))

    def full(self) -> bool:
        return len(self.entries) >= BATCH_ENTRIES or self.bytes >= BATCH_BYTES
