"""The public Python API: `Memory(root)`, one facade over the engine's explicit parts."""
from __future__ import annotations

from functools import cached_property

from memstrata.engine.entries import Entries
from memstrata.engine.index import IndexStep
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import MemstrataError
from memstrata.features.access_fold import AccessFold
from memstrata.features.aging import Aging
from memstrata.features.recall import Recall
from memstrata.features.versions import Versions


class Memory:
    """A memory tree at `root` (default: $MEMSTRATA_HOME, else the tree the current directory is in, else ~/memory).

    `Memory` builds the parts once and hands each what it needs; every public method is a
    line or three that delegates to one part. The save path's steps are registered here, in
    the order they run (docs/architecture.md).

    >>> m = Memory("/tmp/mem"); r = m.write("We chose Postgres", title="DB choice", category="projects/alpha")
    >>> m.read(r.id).title
    'DB choice'
    """

    def __init__(self, root=None, *, embedder=None):
        self.state = state = TreeState(root, embedder=embedder)
        self.save_path = save = SavePath(state, IndexStep(state))
        self._entries = entries = Entries(state, save)
        self._versions = Versions(state, entries, save)
        self._aging = Aging(state, entries, save, AccessFold(state, entries, save))
        self._recall = Recall(state, entries)
        # The other parts are built (and their modules imported) on first use: a first `mem
        # recall` in a fresh process loaded the doctor, import/export, team sync and the secret
        # rules (~0.1 CPU s) before it could start.
        # The save path's steps, in order: a new entry is checked for duplicates and conflicts;
        # a changed entry's body is full text again if it was compressed, its tier and weight are those of
        # its new dates, then its old version is kept.
        save.write_checks.append(self._versions.check_new)
        save.update_steps.append(self._aging.full_text_again)
        save.update_steps.append(self._aging.tier_after_change)
        save.update_steps.append(self._versions.keep_version)

    # -- the parts built on first use -----------------------------------------------------
    @cached_property
    def _shared(self):
        from memstrata.features.shared import SharedSpace

        return SharedSpace(self.state, self._entries, self._recall, open_memory=_open_memory)

    @cached_property
    def _promotion(self):
        from memstrata.features.promotion import Promotion

        return Promotion(self.state, self._entries, self.save_path, self._aging, self._recall, self._shared)

    @cached_property
    def _start_work(self):
        from memstrata.features.start_work import StartWork

        return StartWork(self.state, self._entries, self._promotion)

    @cached_property
    def _review(self):
        from memstrata.features.review import Review

        return Review(self.state, self._entries, self.save_path, self._aging)

    @cached_property
    def _split(self):
        from memstrata.features.split import Split

        return Split(self.state, self.save_path)

    @cached_property
    def _daily(self):
        from memstrata.features.daily import DailyNotes

        return DailyNotes(self.state, self._entries, self.save_path, self._shared)

    @cached_property
    def _transfer(self):
        from memstrata.features.transfer import Transfer

        return Transfer(self.state, self._entries, self.save_path)

    @cached_property
    def _builtin(self):
        from memstrata.features.builtin_import import BuiltinImport

        return BuiltinImport(self.state, self._entries, self.save_path)

    @cached_property
    def _doctor(self):
        from memstrata.doctor import Doctor

        return Doctor(self.state, self.save_path, self._recall)

    @cached_property
    def _team(self):
        from memstrata.features.team import TeamSync

        return TeamSync(self.state, self.save_path, self._recall)

    @cached_property
    def _secrets_allowed(self):
        from memstrata.features.secrets_allowed import SecretsAllowed

        return SecretsAllowed(self.state, self._entries, self._recall)

    @cached_property
    def _turns(self):
        from memstrata.features.turns import Turns

        return Turns(self.state, self._entries)

    @cached_property
    def _capture(self):
        from memstrata.capture.feature import Capture
        from memstrata.features.reply_use import ReplyUses

        uses = ReplyUses(self.state, self._entries, lambda: self._promotion)
        return Capture(self.state, self._entries, self.save_path, self._aging, uses=uses.apply)

    @cached_property
    def _snapshots(self):
        from memstrata.features.snapshots import IndexSnapshots

        return IndexSnapshots(self.state, self._recall)

    # -- the tree ------------------------------------------------------------------------
    @property
    def root(self):
        return self.state.root

    @property
    def settings(self):
        return self.state.settings

    @property
    def catalog(self):
        return self.state.catalog

    @property
    def embedder(self):
        return self.state.embedder

    def lock(self):
        return self.state.lock()

    def now(self):
        return self.state.now()

    def init(self, adopt: bool = False, progress=None, indexes: bool = False, index_progress=None) -> dict:
        """Create the tree; adopted notes are indexed at once (`index` in the result: the sync's
        figures, or `error` when the index cannot be built now and `mem sync` must follow).
        progress(done, total) follows the notes given ids, index_progress (default: progress) the notes indexed."""
        result = self._entries.init(adopt=adopt, indexes_wanted=indexes, progress=progress)
        if result.get("adopted") or result.get("entries"):
            try:
                result["index"] = self._recall.sync(progress=index_progress or progress)
            except MemstrataError as exc:
                result["index"] = {"error": exc.message}
        return result

    def config_list(self) -> dict:
        return self._entries.config_list()

    def config_get(self, key: str):
        return self._entries.config_get(key)

    def config_set(self, key: str, value) -> dict:
        return self._entries.config_set(key, value)

    def config_unset(self, key: str) -> dict:
        return self._entries.config_unset(key)

    def stats(self) -> dict:
        return self._entries.stats()

    def rebuild_indexes(self) -> dict:
        return self._entries.rebuild_indexes()

    def doctor(self, fix: bool = False, lock_timeout: float = 60.0):
        return self._doctor.doctor(fix=fix, lock_timeout=lock_timeout)

    # -- entries -------------------------------------------------------------------------
    def resolve(self, ref: str):
        return self._entries.resolve(ref)

    def read(self, ref: str, *, count_access: bool = True):
        return self._entries.read(ref, count_access=count_access)

    def read_turns(self, ref: str, turn: int, *, around: int = 0, count_access: bool = True):
        """Turn `turn` of a captured session with `around` turns either side (features/turns.py)."""
        return self._turns.read(ref, turn, around, count_access=count_access)

    def list(self, category: str | None = None, tier: str | None = None, status: str | None = None, tags=None):
        self._entries.require_category(category)  # a mistyped category is said, not listed as empty
        return self._entries.list(category, tier, status, tags)

    def unreadable(self, category: str | None = None) -> dict[str, str]:
        return self._entries.unreadable(category)

    def hot_entries(self, now):
        return self._entries.hot_entries(now)

    def write(self, body, *, title: str | None = None, category: str | None = None, tags=None,
              importance=None, important: bool = False, related=None, expires=None, id: str | None = None,
              created=None, extra: dict | None = None, force: bool = False, merge: bool = False,
              share: bool = False):
        """Write a new memory (engine.entries.Entries.write); share=True also copies it to the shared root."""
        if share:
            self._shared.writable_shared()  # no shared root, or not ours alone: fail before anything is written
        result = self._entries.write(body, title=title, category=category, tags=tags, importance=importance,
                                     important=important, related=related, expires=expires, id=id,
                                     created=created, extra=extra, force=force, merge=merge)
        return self._shared.shared_result(result) if share else result

    def update(self, ref: str, body=None, *, title: str | None = None, tags=None, importance=None,
               important: bool | None = None, related=None, expires=None, category: str | None = None,
               add_tags=None, remove_tags=None, agent: str | None = None):
        """Change an entry in place; `tags` sets them all, `add_tags` / `remove_tags` change a few;
        `agent` says who wrote this version (the shared space)."""
        return self._entries.update(ref, body, title=title, tags=tags, importance=importance, important=important,
                                    related=related, expires=expires, category=category, add_tags=add_tags,
                                    remove_tags=remove_tags, agent=agent)

    def delete(self, ref: str, reason: str = "deleted"):
        return self._entries.delete(ref, reason)

    def restore(self, entry_id: str):
        return self._entries.restore(entry_id)

    def trash_list(self, report: bool = True):
        """The trash; listing it marks each item reported (the purge waits for that)."""
        return self._entries.trash_list(report)

    def trash_purge(self, everything: bool = False):
        return self._entries.trash_purge(everything)

    def trash_purge_report(self, everything: bool = False) -> dict:
        """trash_purge (`purged`: the items), and why the rest stays: `left`, `unreported`,
        `undated`, `waiting`, `purgeable_after` (when the first waiting one can go), `retention_days`."""
        return self._entries.trash_purge_report(everything)

    # -- recall --------------------------------------------------------------------------
    def recall(self, query: str, k: int = 10, category: str | None = None, tier: str | None = None,
               status: str | None = None, tags=None, since=None, until=None, strategy: str = "auto",
               explain: bool = False, include_shared: bool = False, min_relevance: float | None = None,
               count_access: bool = True, sessions: bool = True):
        """Find the entries that answer `query`, best first (features.recall.Recall.recall);
        nothing when the best hit is below `min_relevance` (default: the recall_min_relevance
        setting), else the hits that reach recall_relative_relevance x the best;
        include_shared=True also searches the shared root. The hits returned count as accesses
        (in the access journal) unless `count_access` is false. `sessions=False` leaves captured
        sessions out (the notes only)."""
        options = dict(category=category, tier=tier, status=status, tags=tags, since=since, until=until,
                       strategy=strategy, explain=explain, min_relevance=min_relevance, count_access=count_access,
                       sessions=sessions)
        if include_shared:
            return self._shared.recall(query, k=k, **options)
        self._entries.require_category(category)  # (the shared root may hold a category this tree lacks)
        return self._recall.recall(query, k=k, **options)

    def recall_batch(self, queries, k: int = 10, **options) -> list[dict]:
        return self._recall.recall_batch(queries, k=k, **options)

    def warm_up(self) -> list[str]:
        """Load the model and the index's in-memory frame now (a service's start); what failed."""
        return self._recall.warm_up()

    def sync(self, progress=None, announce=None) -> dict:
        return self._recall.sync(progress=progress, announce=announce)

    def reindex(self, progress=None) -> dict:
        return self._recall.reindex(progress=progress)

    def secrets_allow(self, ref: str) -> dict:
        """Say the values flagged in one note are no secret (fingerprints, docs/secrets.md); indexes it."""
        return self._secrets_allowed.allow(ref)

    def secrets_revoke(self, ref: str) -> dict:
        return self._secrets_allowed.revoke(ref)

    def secrets_allowed(self) -> dict:
        return self._secrets_allowed.listed()

    # -- versions ------------------------------------------------------------------------
    def history(self, ref: str) -> list[dict]:
        return self._versions.history(ref)

    def version(self, ref: str, n: int):
        return self._versions.version(ref, n)

    def history_show(self, ref: str, n: int) -> str:
        return self._versions.history_show(ref, n)

    def revert(self, ref: str, to: int):
        return self._versions.revert(ref, to)

    # -- aging, review, promotion ----------------------------------------------------------
    def weight(self, ref: str, update: bool = False, context_correlation: float | None = None) -> dict:
        return self._aging.weight(ref, update=update, context_correlation=context_correlation)

    def maintain(self, dry_run: bool = False, progress=None):
        return self._aging.maintain(dry_run=dry_run, progress=progress)

    def decompress(self, ref: str, show: bool = False, restore: bool = False) -> dict:
        return self._aging.decompress(ref, show=show, restore=restore)

    def review_mark(self, ref: str, status: str) -> dict:
        return self._review.review_mark(ref, status)

    def review_list(self, status: str | None = None):
        return self._review.review_list(status)

    def review_due(self):
        return self._review.review_due()

    def review_stats(self) -> dict:
        return self._review.review_stats()

    def promote(self, context: str, threshold: float | None = None, layers=None, max_count: int | None = None,
                dry_run: bool = False) -> dict:
        return self._promotion.promote(context, threshold=threshold, layers=layers, max_count=max_count,
                                       dry_run=dry_run)

    def promote_last_session(self, cwd: str | None, session_id: str | None = None, dry_run: bool = False) -> dict:
        """Promote what the last captured session of `cwd`'s project needs (features/start_work.py)."""
        return self._start_work.promote_last_session(cwd, session_id=session_id, dry_run=dry_run)

    def autoload(self, context: str | None = None, promote: bool = False, budget: int | None = None,
                 include_shared: bool = True, hot: bool | None = None, session_id: str | None = None,
                 form: str = "markdown", cwd: str | None = None):
        return self._promotion.autoload(context, promote=promote, budget=budget, include_shared=include_shared,
                                        hot=hot, session_id=session_id, form=form, cwd=cwd)

    # -- categories ------------------------------------------------------------------------
    def split(self, category: str, by: str = "year", dry_run: bool = False) -> dict:
        return self._split.split(category, by=by, dry_run=dry_run)

    def merge(self, category: str, dry_run: bool = False) -> dict:
        return self._split.merge(category, dry_run=dry_run)

    # -- other agents: the shared space and daily notes -----------------------------------------
    @property
    def agent_name(self) -> str:
        return self._shared.agent_name

    @property
    def shared_root(self):
        return self._shared.shared_root

    def shared_memory(self) -> "Memory":
        return self._shared.shared_memory()

    def share(self, ref: str) -> dict:
        return self._shared.share(ref)

    def daily(self, text: str, *, day=None, share: bool = False):
        if share:
            self._shared.writable_shared()
        return self._daily.daily(text, day=day, share=share)

    # -- import and export -------------------------------------------------------------------
    def export_jsonl(self, target=None) -> dict:
        from memstrata.features.export import export_jsonl

        return export_jsonl(self.state, self._entries, target)

    def import_path(self, path, layout: str = "auto", progress=None, category: str | None = None) -> dict:
        return self._transfer.import_path(path, layout=layout, progress=progress, category=category)

    def import_jsonl(self, path, progress=None) -> dict:
        return self._transfer.import_jsonl(path, progress=progress)

    def import_tree(self, path, layout: str = "auto", progress=None, category: str | None = None) -> dict:
        return self._transfer.import_tree(path, layout=layout, progress=progress, category=category)

    def import_builtin(self, path, category: str | None = None, dry_run: bool = False) -> dict:
        return self._builtin.import_builtin(path, category=category, dry_run=dry_run)

    # -- captured sessions (docs/capture.md) ---------------------------------------------------
    def capture(self, paths, agent: str | None = None, progress=None) -> dict:
        """Capture the transcripts at `paths` (Claude Code, Codex, plain JSONL): what is new only."""
        return self._capture.capture(paths, agent=agent, progress=progress)

    def capture_agent(self, which: str, since=None, progress=None) -> dict:
        """Capture the transcripts `codex` or `claude` keeps on this machine (changed since `since`)."""
        return self._capture.capture_agent(which, since=since, progress=progress)

    def capture_queue(self, notice: dict) -> dict:
        return self._capture.queue(notice)

    def capture_drain(self, progress=None) -> dict:
        """Capture the transcripts the hooks' notices name (what a hook starts in the background)."""
        return self._capture.drain(progress=progress)

    def capture_forget(self, session: str, purge: bool = False) -> dict:
        """Remove a captured session everywhere: to the trash, or at once with `purge`."""
        return self._capture.forget(session, purge=purge)

    def capture_status(self) -> dict:
        return self._capture.status()

    # -- the team: a git remote, index snapshots on object storage (docs/team.md) ----------------
    def sync_remote(self, remote: str = "origin") -> dict:
        """Commit local changes, pull with the team merge rules, push; the index catches up."""
        return self._team.sync(remote)

    def clone(self, url: str, machine: str | None = None, index_uri: str | None = None) -> dict:
        """Make this (new) tree from a git remote; the index from a snapshot when given, else embedded."""
        result = self._team.clone(url, machine)
        # not self.init(): it would embed every entry, then `index` below would count 0 (and a
        # snapshot would be pulled over an index just built); the index is built once, here
        result["init"] = self._entries.init()
        result["index"] = self._snapshots.pull(index_uri) if index_uri else self.sync()
        return result

    def index_push(self, uri: str) -> dict:
        return self._snapshots.push(uri)

    def index_pull(self, uri: str) -> dict:
        return self._snapshots.pull(uri)


def _open_memory(root, embedder) -> Memory:
    """The Memory of another root (the shared space), sharing an already loaded model."""
    return Memory(root, embedder=embedder)
