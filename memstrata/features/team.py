"""TeamSync: a tree shared through a git remote - commit, pull with the team merge rules, push, catch up the index."""
from __future__ import annotations

import re
import time
from pathlib import Path

from memstrata.capture.privacy import keep_personal, untrack_personal
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import CorruptEntry, MemstrataError
from memstrata.features.gitrepo import TRAILER_MACHINE, Git, GitError, ensure_attributes
from memstrata.features.recall import Recall
from memstrata.features.team_clone import clone, leave_out
from memstrata.features.team_merge import resolve_all
from memstrata.features.team_recover import clear_stale_locks, recover
from memstrata.features.team_settings import guard_pulled_config
from memstrata.scoring.merge import describe_changes
from memstrata.storage import codec, journal, journal_compact, layout, modes, secret_allow, trash, tree, versions
from memstrata.storage.atomic import atomic_write_text
from memstrata.storage.catalog import is_entry_path_in
from memstrata.storage.paths import category_of

_UNABLE = re.compile(r"^error: unable to create file (.+?): ", re.MULTILINE)
# storage.atomic's temp files (`.{name}.{pid}.{random}.tmp`) and replace_guard's `.kept` files (a local
# recovery, never the team's): a vault's own .gitignore may not list them
NOT_STAGED = (".", ":(exclude,glob)**/.*.[0-9]*.[0-9a-f]*.tmp", ":(exclude,glob)**/.*.[0-9]*.[0-9a-f]*.kept")
MAX_ATTEMPTS = 8  # pull/push rounds when the remote keeps moving meanwhile


def engine_ignores(root, rel: str) -> bool:
    """Whether the engine's own .gitignore lines (storage.tree.GITIGNORE, layout.ADOPTED_GITIGNORE
    inside an adopted vault's `.memstrata/`) keep `rel` out of git, whatever else a .gitignore says."""
    import fnmatch

    if layout.is_adopted(root):
        home = layout.ENGINE_HOME + "/"
        if not rel.startswith(home):
            return False
        rel, lines = rel[len(home):], layout.ADOPTED_GITIGNORE
    else:
        lines = tree.GITIGNORE
    parts = rel.split("/")
    for line in lines.split():
        if line.endswith("/"):
            if line[:-1] in parts[:-1]:
                return True
        elif fnmatch.fnmatchcase(parts[-1], line):
            return True
    return False


def committed_note_id(path: str, blob: str) -> str:
    """The id for a note committed without one (pulled from a machine that gave it none): made from
    its path and git blob, so every clone that pulls it gives it the same id and their commits agree."""
    import hashlib

    return hashlib.sha1(f"{path}\0{blob}".encode("utf-8")).hexdigest()[:12]


class TeamSync:
    """`mem sync --remote`, `mem init --clone`: the tree's git remote as the team's meeting point."""

    def __init__(self, state: TreeState, save: SavePath, recall: Recall):
        self.state = state
        self.save = save
        self.recall = recall
        self.root = state.root
        self.git = Git(state.root)

    # -- clone ------------------------------------------------------------------------------
    def clone(self, url: str, machine: str | None = None) -> dict:
        """Make this tree from a remote (features/team_clone.py); the caller then runs init and sync."""
        return clone(self.git, url, machine)

    # -- sync -------------------------------------------------------------------------------
    def sync(self, remote: str = "origin", index: bool = True) -> dict:
        """Commit local changes, pull (team merge rules), push; retry while the remote moves on.

        Then the derived data catches up from the changed files only: catalog, INDEX.md,
        vector index (`Recall.sync`, which re-embeds only changed text).
        """
        git = self.git
        tree.require_initialised(self.root)  # first: git would fail in a missing folder as "not installed"
        git.require_repo(remote)
        self._use_limits()
        newly_protected = git.protect_merges()
        machine = git.machine()
        result = {"remote": remote, "machine": machine, "committed": [], "pulled": 0,
                  "conflicts": [], "pushed": False, "attempts": 0, "accesses_shared": 0,
                  "settings_held_back": [], "settings_pulled": [], "warnings": [], "recovered": [], "skipped": []}
        with self.state.lock():
            self._recover(machine, result)  # first: a stopped rebase leaves HEAD detached, no branch to name
            if newly_protected and git.head():
                result["unconverted"] = git.undo_conversions()
        result["branch"] = branch = git.branch()
        for attempt in range(1, MAX_ATTEMPTS + 1):
            result["attempts"] = attempt
            with self.state.lock():
                self._recover(machine, result)
                self._commit_local(machine, result)
            git.run("fetch", "-q", remote)
            tracking = f"refs/remotes/{remote}/{branch}"
            with self.state.lock():
                self._recover(machine, result)
                self._commit_local(machine, result)
                if git.ref_exists(tracking):
                    self._merge(tracking, machine, result)
                    self._fresh_ids_for_pulled_copies(result)
                    # fresh ids for pulled copies, ids for notes pulled without one: pushed in this round
                    self._commit_local(machine, result)
            if git.head() is None:
                break  # nothing on either side yet
            if git.ref_exists(tracking) and git.out("rev-parse", "HEAD") == git.out("rev-parse", tracking):
                break  # in step with the remote: nothing to push
            done = git.run("push", "-q", remote, f"HEAD:refs/heads/{branch}", check=False)
            if done.returncode == 0:
                result["pushed"] = True
                git.run("fetch", "-q", remote, check=False)  # the tracking ref follows the push
                break
            if "rejected" not in done.stderr and "fetch first" not in done.stderr and "non-fast-forward" \
                    not in done.stderr:
                raise GitError(f"git push failed: {done.stderr.strip().splitlines()[-1] if done.stderr else ''}")
            time.sleep(0.05 * attempt)  # the remote moved meanwhile: fetch, merge, push again
        else:
            raise GitError(f"the remote kept moving: gave up after {MAX_ATTEMPTS} attempts")
        result["head"] = git.head()
        pulled = result.pop("_pulled", set())
        result["pulled"] = len(pulled)
        result["ignored"] = git.special_paths("HEAD", sorted(pulled)) if pulled else []
        self._note_sharing_problem(result)  # also one the pull just brought in
        if pulled:
            self.state.use_settings(None)  # config.md may have come from another machine
        committed_entries = result.pop("_committed_entries", False)
        if index and (committed_entries or any(is_entry_path_in(self.root, p) for p in pulled)
                      or self._index_behind()):
            # entries pulled, changed here outside the engine (a hand edit, a new note) and committed in
            # this round, or the index behind the tree all the same (a sync killed after its push, before
            # it indexed; a hand edit committed with plain `git commit`): the index ends in step with the
            # tree, whatever this round had to commit or pull
            result["index"] = self.recall.sync()  # only files changed since the last sync are read
        folder = layout.at(self.root, versions.VERSIONS_DIR) + "/"  # a vault's `.memstrata/versions/`
        kept = {p[len(folder):].split("/")[0] for p in pulled if p.startswith(folder) and "/" in p[len(folder):]}
        if index and kept:  # an entry is indexed with its kept versions: new ones came in beside its file
            result["index_versions"] = self.recall.reindex_entries(sorted(kept))
        return result

    def _index_behind(self) -> bool:
        """Whether the index misses a change of the tree, looked at without loading the model (only
        files whose size/mtime differ from their rows are read). Notes without an id got theirs
        before this round's commit (`_give_ids`)."""
        from memstrata.engine.index import INDEX_FAILURES
        from memstrata.retrieval.sync import behind

        try:
            index = self.state.vector_index()
            index.refresh()
            return behind(index)
        except INDEX_FAILURES:  # a damaged table: the sync says what it can do about it
            return True

    def _use_limits(self) -> None:
        """The network timeouts of this tree's settings."""
        try:
            s = self.state.settings
            self.git.limits = (s.git_connect_timeout, s.git_idle_timeout, s.git_timeout)
        except MemstrataError:
            pass

    def _recover(self, machine: str, result: dict) -> None:
        """A sync killed half-way (caller holds the lock): its git locks removed, its merge, rebase or
        conflicted index undone (team_recover), so this sync merges again with the team rules."""
        locks = clear_stale_locks(self.git)
        done = recover(self.git, self.root, machine)
        if locks or done:
            found = (done or {}).get("interrupted", [])
            result["recovered"].append({"locks": locks, **(done or {})})
            what = ", ".join(found + [f"stale {lock}" for lock in locks])
            result["warnings"].append(f"an interrupted sync was undone ({what}) and the merge done again"
                                      + (f"; the tree as found is kept at {done['saved'][:12]}" if done else ""))

    def _note_sharing_problem(self, result: dict) -> None:
        """A `.access` that is not a real folder (a pulled symlink) is said at every sync, once."""
        problem = journal.sharing_problem(self.root)
        if problem and problem not in result["warnings"]:
            result["warnings"].append(problem)

    def _commit_local(self, machine: str, result: dict) -> None:
        """Commit whatever changed in the tree, with a message that says what (caller holds the lock).

        This machine's pending accesses (git-ignored) first move into its tracked journal file,
        `.access/<machine>.log`, so the other machines count them after they pull."""
        git = self.git
        result["accesses_shared"] = result.get("accesses_shared", 0) + journal.publish(self.root, machine)
        if journal_compact.due(self.root, machine):  # a vault's reads are never folded: its file keeps growing
            result["journal_compacted"] = journal_compact.compact(self.root, machine, self.state.now())
        self._note_sharing_problem(result)
        if not layout.is_adopted(self.root):  # nothing at a vault's top: .git/info/attributes holds the line
            ensure_attributes(self.root)
        self._give_ids(result)
        tree.ensure_gitignore(self.root)  # .quarantine/ and the rest stay out of the team's history
        keep_personal(self.root, self.state.settings, git)  # captured sessions stay here (capture_team_sync)
        git.run("add", "-A", "--", *NOT_STAGED)
        untrack_personal(self.root, self.state.settings, git)
        # what .gitignore keeps out but a peer force-added (a `.lock`, a `.cache/` file) leaves the
        # index: the file stays on disk, the next commit removes it from the team's tree
        # ... only what the engine's own rules ignore: a peer's `.gitignore` of `*` must not take the
        # notes or the engine's settings out of the team's tree
        tracked_ignored = [p for p in git.out("ls-files", "-ci", "--exclude-standard", "-z").split("\0")
                           if p and engine_ignores(self.root, p)]
        if tracked_ignored:
            git.run("rm", "-q", "--cached", "--ignore-unmatch", "--", *tracked_ignored)
        staged = git.staged()
        if not staged:
            return
        counts = {"A": 0, "M": 0, "D": 0}
        for status, path in staged:
            if is_entry_path_in(self.root, path) and status[0] in counts:
                counts[status[0]] += 1
        summary = describe_changes(counts["A"], counts["M"], counts["D"])
        message = f"memstrata: {summary}\n\n{TRAILER_MACHINE}: {machine}\n"
        agent = self.state.settings.agent_name
        if agent:
            message += f"Memstrata-Agent: {agent}\n"
        git.run("commit", "-q", "--no-verify", "-m", message)
        if any(counts.values()):  # entry files changed here by hand or by git: the index follows below
            result["_committed_entries"] = True
        result["committed"].append({"summary": summary, "new": counts["A"], "updated": counts["M"],
                                    "deleted": counts["D"], "files": len(staged)})

    def _give_ids(self, result: dict) -> None:
        """Notes without an id get it before the commit (caller holds the lock), so the pushed note
        carries it and the tree is clean after the sync (was: given after the push, by the index sync,
        a different id on every clone). A note as committed (pulled from a machine that gave it none)
        gets the id of its path and blob, the same on every clone; a new note here a random one."""
        from memstrata.storage.entry import new_id

        git, head = self.git, self.git.head()

        def id_for(rel: str) -> str:
            if head is not None:
                blob = git.out("rev-parse", "-q", "--verify", f"{head}:{rel}", check=False)
                if blob and blob == git.out("hash-object", "--", rel, check=False):
                    return committed_note_id(rel, blob)
            return new_id()

        left: list[str] = []
        given = self.recall.entries.give_ids(left, id_for=id_for)
        if given:
            result["ids_given"] = result.get("ids_given", 0) + given
        for rel in left:
            result["warnings"].append(f"{rel} changed while it was given an id: committed without one, "
                                      f"given one at the next sync")

    def _merge(self, tracking: str, machine: str, result: dict) -> None:
        """Bring the remote's commits in (caller holds the lock): fast-forward, or a merge whose
        every conflicted path is resolved by the team rules; then INDEX.md regenerated, deletions
        pulled into the local trash, and one commit."""
        git = self.git
        head = git.head()
        if head is not None and git.is_ancestor(tracking, "HEAD"):
            return
        incoming = [p for _, p in git.changed(head, tracking)] if head else [p for _, p in git.changed(None, tracking)]
        self._skip(git.unwritable(incoming), "name too long for this file system", result)
        own_allow = secret_allow.held_before_pull(self.root, incoming)  # a teammate's must not replace it
        # git replaces a file it updates (the umask's mode): a vault's note gets its own mode back below
        own_modes = modes.modes_of(self.root, [p for p in incoming if not p.startswith(layout.ENGINE_HOME + "/")]) \
            if layout.is_adopted(self.root) else {}
        for retry in (False, True):
            if head is None or git.is_ancestor("HEAD", tracking):
                done = git.run("merge", "-q", "--ff-only", tracking, check=False)
                started = done.returncode == 0
                resolved = []
            else:
                # no rename pairing asked; resolve_all still judges each path by its own texts, as git's
                # default strategy may pair a deleted entry with a similar new version file regardless
                done = git.run("merge", "-q", "--no-commit", "--no-ff", "--allow-unrelated-histories",
                               "-Xno-renames", tracking, check=False)
                started = git.ref_exists("MERGE_HEAD")
            if started:
                break
            refused = _UNABLE.findall(done.stderr or "")
            if retry or not refused:
                lines = (done.stderr or done.stdout).strip().splitlines()
                raise GitError(f"git merge did not start: {lines[-1] if lines else 'exit ' + str(done.returncode)}")
            git.run("reset", "-q", "--hard", "HEAD")  # local changes were committed just before, under this lock
            self._skip(refused, "this file system refuses the name", result)
        if git.ref_exists("MERGE_HEAD"):
            resolved = resolve_all(git, self.root, machine)
        new_head_files = git.changed(head, tracking) if head else git.changed(None, tracking)
        result.setdefault("_pulled", set()).update(p for _, p in new_head_files)
        result["conflicts"] += [r for r in resolved if r["kind"] not in ("index", "same", "kept")]
        held, applied = guard_pulled_config(git, self.root, head, machine)  # a peer's config.md may not disarm this machine
        result["settings_held_back"] += held
        result["settings_pulled"] += applied
        self._trash_pulled_deletions(head, tracking, machine)
        self.save.write_indexes(None)  # INDEX.md are derived: regenerated, never merged
        git.run("add", "-A", "--", *NOT_STAGED)
        if git.ref_exists("MERGE_HEAD"):
            message = (f"memstrata: merged {tracking.rsplit('/', 1)[-1]} from the remote "
                       f"({len(resolved)} paths resolved)\n\n{TRAILER_MACHINE}: {machine}\n")
            git.run("commit", "-q", "--no-verify", "-m", message)
        elif git.staged():
            kept = f"kept this machine's {', '.join(h['setting'] for h in held)}; " if held else ""
            git.run("commit", "-q", "--no-verify", "-m",
                    f"memstrata: {kept}INDEX.md regenerated\n\n{TRAILER_MACHINE}: {machine}\n")
        if head:  # what the merge itself wrote (a conflict's kept version) changes the index too
            result["_pulled"].update(p for _, p in git.changed(head, "HEAD"))
        modes.put_back(self.root, own_modes)
        if own_allow is not None:
            secret_allow.put_back(self.root, own_allow)
            result["warnings"].append(f"the pull changed {layout.at(self.root, secret_allow.ALLOW_FILE)} (a "
                                      "teammate committed or removed theirs): this machine's is kept")

    def _fresh_ids_for_pulled_copies(self, result: dict) -> int:
        """A pulled file holding the id of another file (a peer copied a note, its id line with it) gets
        a fresh id now, as the doctor's fix does (caller holds the lock): `mem read` and recall agree at
        once. The file that keeps the id is chosen as the doctor and adopt choose it (keeper_first)."""
        from memstrata.storage.catalog import read_entry_file
        from memstrata.storage.entry import new_id
        from memstrata.storage.holders import keeper_first

        pulled = {p for p in result.get("_pulled", ()) if is_entry_path_in(self.root, p)}
        if not pulled:
            return 0
        catalog = self.state.catalog
        catalog.refresh()
        holders: dict[str, list] = {}
        for entry in catalog.entries():
            if entry.id:
                holders.setdefault(entry.id, []).append(entry)
        given = 0
        for entry_id, same in sorted(holders.items()):
            if len(same) < 2 or not any(e.path in pulled for e in same):
                continue
            keeper, *others = keeper_first(self.root, same, catalog.first_seen(entry_id))
            for other in others:
                try:
                    current = read_entry_file(self.root, other.path)
                    fresh = current.copy(id=new_id())
                    self.save.save(fresh, previous=current)
                except (MemstrataError, OSError) as exc:  # left for `mem doctor` to report
                    result["warnings"].append(f"{other.path} holds the id of {keeper.path} ({entry_id}) and could "
                                              f"not be given a fresh one ({getattr(exc, 'message', exc)})")
                    continue
                result["warnings"].append(f"{other.path} came with the id of {keeper.path} ({entry_id}): given a "
                                          f"fresh id, {fresh.id}")
                given += 1
        return given

    def _skip(self, paths: list[str], why: str, result: dict) -> None:
        leave_out(self.git, paths, why, result)

    def _trash_pulled_deletions(self, head: str | None, tracking: str, machine: str) -> None:
        """An entry another machine deleted goes to this machine's trash too (restorable, and
        its kept versions are not orphans); so does one whose path the other machine gave to another
        entry (a rename onto it, a new entry written there after a delete) and that lives nowhere now."""
        if head is None:
            return
        changes = [(s, p) for s, p in self.git.changed(head, tracking) if is_entry_path_in(self.root, p)]
        gone = [p for status, p in changes if status == "D"]
        catalog = self.state.catalog
        held = {p: e.id for status, p in changes if status == "M" and (e := catalog.get(p)) is not None and e.id}
        if not gone and not held:
            return
        catalog.refresh()  # the catalog as merged (held: this machine's ids before the merge)
        for path in gone + [p for p, held_id in held.items() if (e := catalog.get(p)) is None or e.id != held_id]:
            if path in gone and (self.root / path).exists():
                continue  # kept: an edit won over the delete
            text = self.git.show(f"{head}:{path}")
            try:
                entry = codec.parse(text or "", category=category_of(path), path=path,
                                    id_key=layout.id_key(self.root))
            except CorruptEntry:
                continue
            if not entry.id or catalog.paths_of(entry.id) or (path in held and entry.id != held[path]):
                continue  # no id, or the entry lives on at another path (a move)
            at = path if path in gone else tree.unique_entry_path(self.root, category_of(path), Path(path).stem)
            atomic_write_text(self.root / at, text, root=self.root,  # a vault's note: as git would write it
                              mode=modes.vault_file_mode(self.root, path))
            why = ("deleted on " if path in gone else "its path given to another entry on ") + \
                self.git.writer_of(tracking, path)
            trash.move_to_trash(self.root, entry, why, self.state.now(), source=at)
