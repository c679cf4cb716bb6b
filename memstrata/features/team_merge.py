"""After `git merge`: each path both sides changed is resolved by the team rules, never left with markers."""
from __future__ import annotations

import re
import tempfile
from pathlib import Path, PurePosixPath

from memstrata.errors import MemstrataError
from memstrata.features.gitrepo import Git
from memstrata.scoring.merge import content, keep_edit_over_delete, merge_entry, same_entry, split_by_id
from memstrata.storage import codec, journal, layout, modes, tree, vault_note, versions
from memstrata.storage.atomic import atomic_write_text
from memstrata.storage.catalog import is_entry_path_in
from memstrata.storage.indexes import INDEX_FILE
from memstrata.storage.paths import category_of



def _snapshot(root: Path, path: str):
    """The match (id, number) when `path` is a kept version (`.versions/`, a vault's `.memstrata/versions/`)."""
    folder = layout.at(root, versions.VERSIONS_DIR)
    return re.match(rf"^{re.escape(folder)}/([^/]+)/v(\d+)\.md$", path)


def resolve_all(git: Git, root: Path, ours_by: str) -> list[dict]:
    """Resolve every path of the merge in progress that git left unmerged, or that a rename
    pairing of git's hid; what was decided, one dict per path.

    Each path is judged by its own three texts in the commits (merge base, HEAD, MERGE_HEAD),
    never by what git paired with it: git's merge pairs a deleted file with a similar new one
    (`-Xno-renames` notwithstanding, in the default strategy of some versions), which would put
    one entry's edit into another's version file and leave the edited entry deleted."""
    root = Path(root)
    base = git.out("merge-base", "HEAD", "MERGE_HEAD", check=False).splitlines()
    base = base[0] if base else None
    unmerged = git.unmerged()
    hidden = _hidden_by_pairing(git, base, set(unmerged))
    moves = _Moves(git, base, root)
    out = []
    for path in sorted(set(unmerged) | hidden):
        texts = _own_texts(git, base, path, unmerged.get(path, set()))
        out.append(_resolve(git, root, path, texts, ours_by, moves))
    return out


class _Moves:
    """Where each side of the merge put an entry it moved: the file a side added or changed since the
    merge base that holds the entry's id (found with one `git grep` per question, then parsed)."""

    def __init__(self, git: Git, base: str | None, root: Path):
        self.git, self.base, self.root = git, base, root
        self._changed: dict[str, set[str]] = {}

    def new_path(self, rev: str, entry_id: str | None, old: str) -> str | None:
        if not entry_id or self.base is None:
            return None
        if rev not in self._changed:  # a move lands on a new path, or on one the side also changed (a swap)
            self._changed[rev] = {path for status, path in self.git.changed(self.base, rev)
                                  if status[:1] in ("A", "M") and is_entry_path_in(self.root, path)
                                  and not _snapshot(self.root, path)}
        found = self.git.out("grep", "-l", "-F", "-e", entry_id, rev, "--", check=False)
        for line in sorted(found.splitlines()):
            path = line[len(rev) + 1:] if line.startswith(f"{rev}:") else line
            if path == old or path not in self._changed[rev]:
                continue
            try:
                e = _parse(self.git.show(f"{rev}:{path}"), path, self.root)
            except MemstrataError:
                continue
            if e is not None and e.id == entry_id:
                return path
        return None


def _hidden_by_pairing(git: Git, base: str | None, unmerged: set[str]) -> set[str]:
    """Paths deleted on one side and changed on the other that git did not leave unmerged: only a
    rename pairing does that (the change went to the paired file)."""
    if base is None:
        return set()
    ours, theirs = dict(_swap(git.changed(base, "HEAD"))), dict(_swap(git.changed(base, "MERGE_HEAD")))
    return {p for p in set(ours) & set(theirs) - unmerged if "D" in (ours[p], theirs[p]) and ours[p] != theirs[p]}


def _swap(changes):
    return ((path, status[:1]) for status, path in changes)


def _own_texts(git: Git, base: str | None, path: str, stages: set[int]) -> dict:
    """{1: base, 2: ours, 3: theirs} texts of `path` itself (a missing side left out). Ours and
    theirs come from HEAD and MERGE_HEAD; the base from git's stage 1 (its merge base, virtual
    for criss-cross histories) unless git paired the path with another, then from the merge base."""
    texts = {2: git.show(f"HEAD:{path}"), 3: git.show(f"MERGE_HEAD:{path}")}
    staged = {n: git.show(f":{n}:{path}") for n in sorted(stages)}
    paired = any(staged.get(n) != texts[n] for n in (2, 3))
    texts[1] = git.show(f"{base}:{path}") if (paired or not stages) and base else staged.get(1)
    return {n: t for n, t in texts.items() if t is not None}


def _resolve(git: Git, root: Path, path: str, texts: dict, ours_by: str, moves: "_Moves | None" = None) -> dict:
    base, ours, theirs = texts.get(1), texts.get(2), texts.get(3)
    if ours == base or theirs == base or ours == theirs:  # one side's change only (or the same)
        return _one_side(git, root, path, theirs if ours == base else ours)
    name = PurePosixPath(path).name
    if name == INDEX_FILE:
        _write(git, root, path, texts.get(2) or texts.get(3) or "")
        return {"path": path, "kind": "index", "message": "derived: regenerated"}
    if _snapshot(root, path):
        return _resolve_snapshot(git, root, path, texts)
    if is_entry_path_in(root, path):
        try:
            return _resolve_entry(git, root, path, texts, ours_by, moves)
        except MemstrataError:  # a side that cannot be parsed: keep both files as they are
            return _keep_both(git, root, path, texts, "unreadable side: both files kept")
    return _resolve_other(git, root, path, texts)


def _one_side(git: Git, root: Path, path: str, text: str | None) -> dict:
    """A path only one side changed (left unmerged because git paired it with another): that side's file."""
    if text is None:
        git.run("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
        (root / path).unlink(missing_ok=True)
    else:
        _write(git, root, path, text)
    return {"path": path, "kind": "same", "message": "changed on one side only: that side's file"}


def _parse(text: str | None, path: str, root: Path):
    """An entry of a commit (its id under the tree's key: `mem-id` in an adopted vault)."""
    if text is None:
        return None
    return codec.parse(text, category=category_of(path), path=path, id_key=layout.id_key(root))


def _resolve_entry(git: Git, root: Path, path: str, texts: dict, ours_by: str, moves: "_Moves | None" = None) -> dict:
    base, ours, theirs = (_parse(texts.get(n), path, root) for n in (1, 2, 3))
    split = split_by_id(base, ours, theirs)
    if split is not None:  # different entries at one path: never merged by their texts
        return _resolve_split(git, root, path, texts, split, ours_by, moves)
    if ours is None or theirs is None:  # deleted on one side, changed on the other
        edited = ours if ours is not None else theirs
        mover = "MERGE_HEAD" if ours is not None else "HEAD"
        moved_to = moves.new_path(mover, edited.id, path) if moves is not None else None
        if moved_to is not None and keep_edit_over_delete(base, edited):
            return _follow_move(git, root, path, moved_to, base, edited, mover, ours_by)
        if keep_edit_over_delete(base, edited):
            _write(git, root, path, texts[2] if ours is not None else texts[3])
            return {"path": path, "id": edited.id, "kind": "kept_edit",
                    "message": f"{edited.id}: deleted on one machine, changed on another: the change is kept"}
        git.run("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
        (root / path).unlink(missing_ok=True)
        return {"path": path, "id": edited.id, "kind": "deleted",
                "message": f"{edited.id}: deleted (the other side had only read it)"}
    theirs_by = git.writer_of("MERGE_HEAD", path)
    if base is None and not same_entry(ours, theirs):
        return _keep_both(git, root, path, texts, "two new entries at one path: both kept")
    ours_label = ours_by + (f"/{ours.agent}" if ours.agent else "")
    theirs_label = theirs_by + (f"/{theirs.agent}" if theirs.agent else "")
    kept_numbers = list(versions.list_snapshots(root, ours.id)) if ours.id else []
    result = merge_entry(base, ours, theirs, ours_label, theirs_label, kept_numbers)
    for n, entry in result.kept:
        versions.save_snapshot(root, entry.id, n, codec.render(entry))
        git.run("add", "--", versions.snapshot_path(root, entry.id, n).relative_to(root).as_posix())
    _keep_lines(git, root, result, ours, {"HEAD": path, "MERGE_HEAD": path})
    _write(git, root, path, _merged_text(root, path, result.entry, (ours, texts[2]), (theirs, texts[3])))
    return {"path": path, "id": ours.id, "kind": result.kind,
            "message": result.message or f"{ours.id}: merged ({result.kind})"}


def _follow_move(git: Git, root: Path, path: str, moved_to: str, base, edited, mover: str, ours_by: str,
                 leave_path: bool = False) -> dict:
    """One side moved the entry to `moved_to` (another category), the other changed it at `path`:
    the two are merged by the team rules into the moved file, and `path` goes (one file per id),
    unless `leave_path`: the mover put another entry there."""
    moved = _parse(git.show(f"{mover}:{moved_to}"), moved_to, root)
    ours, theirs = (edited, moved) if mover == "MERGE_HEAD" else (moved, edited)
    theirs_by = git.writer_of("MERGE_HEAD", moved_to if mover == "MERGE_HEAD" else path)
    kept_numbers = list(versions.list_snapshots(root, edited.id))
    result = merge_entry(base, ours, theirs, ours_by, theirs_by, kept_numbers)
    for n, entry in result.kept:
        versions.save_snapshot(root, entry.id, n, codec.render(entry))
        git.run("add", "--", versions.snapshot_path(root, entry.id, n).relative_to(root).as_posix())
    _keep_lines(git, root, result, ours, {"HEAD": moved_to if mover == "HEAD" else path,
                                          "MERGE_HEAD": moved_to if mover == "MERGE_HEAD" else path})
    merged = result.entry.copy(category=moved.category, path=moved_to)
    moved_text = git.show(f"{mover}:{moved_to}")
    edited_text = git.show(f"{'HEAD' if mover == 'MERGE_HEAD' else 'MERGE_HEAD'}:{path}")
    _write(git, root, moved_to, _merged_text(root, moved_to, merged, (moved, moved_text), (edited, edited_text)))
    if not leave_path:
        git.run("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
        (root / path).unlink(missing_ok=True)
    return {"path": path, "id": edited.id, "kind": "moved_edit", "moved_to": moved_to,
            "message": f"{edited.id}: moved to {moved_to} on one machine, changed on another: both kept there"}


def _resolve_split(git: Git, root: Path, path: str, texts: dict, split, ours_by: str, moves: "_Moves | None") -> dict:
    """`path` holds different entries on the two sides (scoring.merge.split_by_id): each is kept. The
    entry a side put at the path (a rename, a new entry after a delete) stays there, the other side's
    new one goes beside it; the entry the base held there follows its side's move (merged into the
    moved file), or, changed on the side that kept it, is kept beside them; only read there, it goes
    (the other side took it away; the pulled removal puts it into this machine's trash)."""
    base, ours, theirs = split.lineage
    news = [(e, n) for e, n in ((split.ours_new, 2), (split.theirs_new, 3)) if e is not None]
    placed, out = [], {"path": path, "kind": "both_kept", "ids": [], "message": ""}
    for n, (entry, side) in enumerate(news):
        at = path if n == 0 else _free_beside(root, path)
        _place(git, root, at, texts[side], entry.id, texts)
        placed.append((entry.id, at))
    edited = ours if ours is not None else theirs
    if base is not None and edited is not None:
        leaver = "HEAD" if ours is None else "MERGE_HEAD"
        moved_to = moves.new_path(leaver, base.id, path) if moves is not None and base.id else None
        if keep_edit_over_delete(base, edited):
            if moved_to is not None:
                _follow_move(git, root, path, moved_to, base, edited, leaver, ours_by, leave_path=bool(news))
                placed.append((edited.id, moved_to))
            else:
                at = path if not news else _free_beside(root, path)
                _place(git, root, at, texts[2 if ours is not None else 3], edited.id, texts)
                placed.append((edited.id, at))
    if not placed:
        git.run("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
        (root / path).unlink(missing_ok=True)
    out["ids"] = [i for i, _ in placed]
    out["moved_to"] = next((at for _, at in placed if at != path), None)
    out["message"] = (f"{path} held different entries on the two machines (a rename or a new entry took its "
                      f"path): each kept, " + ", ".join(f"{i or 'a note without an id'} at {at}" for i, at in placed))
    return out


def _free_beside(root: Path, path: str) -> str:
    """A free entry path next to `path` (`notes/a-2.md`), the same folder."""
    return tree.unique_entry_path(root, category_of(path), PurePosixPath(path).stem,
                                  archived="/archived/" in f"/{path}")


def _place(git: Git, root: Path, rel: str, text: str, entry_id: str | None, texts: dict) -> None:
    """Write an entry's side text at `rel`, unless an earlier path of this merge already merged that
    entry into the file there (a move followed into `rel`: the file holds the id, neither side's text)."""
    try:
        current = (root / rel).read_text(encoding="utf-8")
        if entry_id and current not in texts.values() and _parse(current, rel, root).id == entry_id:
            git.run("add", "--", rel)
            return
    except (OSError, UnicodeDecodeError, MemstrataError, AttributeError):
        pass
    _write(git, root, rel, text)


def _keep_lines(git: Git, root: Path, result, ours, paths: dict) -> None:
    """In an adopted vault the note holds no `history:`: a conflict's lines (date, machine, won or
    lost) go beside its kept versions (`.memstrata/versions/{id}/vN.json`), for `mem history`. A side
    with no date of its own (a note without `updated:`) is dated by its commit's day."""
    if not layout.is_adopted(root) or not result.kept:
        return
    first = min(n for n, _ in result.kept)
    loser_is_ours = content(result.kept[0][1]) == content(ours)
    for item in result.entry.history:
        if int(item["version"]) < first:
            continue
        item = dict(item)
        if not item.get("date"):
            lost = int(item["version"]) < int(result.entry.version)
            side = "HEAD" if lost == loser_is_ours else "MERGE_HEAD"
            item["date"] = git.out("log", "-1", "--format=%cs", side, "--", paths[side], check=False)[:10]
        rel = versions.save_line(root, result.entry.id, item).relative_to(root).as_posix()
        git.run("add", "--", rel)


def _merged_text(root: Path, path: str, merged, first: tuple, second: tuple) -> str:
    """The file text of a merged entry. In a tree made by `mem init`, the engine's rendering; in
    an adopted vault, the user's own note: the text of the side whose body won (`first` unless only
    `second`'s body is the merged one), with the merged body and the user's keys, none of the
    engine's (storage/vault_note.py; the loser is a kept version in `.memstrata/versions/`)."""
    if not layout.is_adopted(root):
        return codec.render(merged)
    (first_entry, first_text), (second_entry, second_text) = first, second
    won = second_text if merged.body == second_entry.body != first_entry.body else first_text
    return vault_note.note_text(won, path, merged.copy(path=path))


def _keep_both(git: Git, root: Path, path: str, texts: dict, why: str) -> dict:
    """Ours stays at `path`; theirs goes to a free path next to it."""
    ours, theirs = texts.get(2), texts.get(3)
    _write(git, root, path, ours if ours is not None else theirs or "")
    moved = None
    if ours is not None and theirs is not None and theirs != ours:
        stem = PurePosixPath(path).stem
        moved = tree.unique_entry_path(root, category_of(path), stem, archived="/archived/" in f"/{path}")
        _write(git, root, moved, theirs)
    return {"path": path, "kind": "both_kept", "moved_to": moved, "message": why}


def _resolve_snapshot(git: Git, root: Path, path: str, texts: dict) -> dict:
    """A kept version both machines wrote under one number: ours keeps it, theirs gets the next free one."""
    ours, theirs = texts.get(2), texts.get(3)
    _write(git, root, path, ours if ours is not None else theirs or "")
    if ours is not None and theirs is not None and ours != theirs and not _same_text(ours, theirs, path, root):
        entry_id = _snapshot(root, path).group(1)
        n = max(versions.list_snapshots(root, entry_id) or {0: None}) + 1
        rel = versions.snapshot_path(root, entry_id, n).relative_to(root).as_posix()
        _write(git, root, rel, theirs)
        return {"path": path, "kind": "both_kept", "moved_to": rel, "message": "two kept versions: both kept"}
    return {"path": path, "kind": "kept", "message": "kept version"}


def _same_text(a: str, b: str, path: str, root: Path) -> bool:
    """Two kept versions with the same title and body (e.g. one was read once more): one is enough."""
    try:
        return content(_parse(a, path, root)) == content(_parse(b, path, root))
    except MemstrataError:
        return False


def _resolve_other(git: Git, root: Path, path: str, texts: dict) -> dict:
    """config.md, sidecars, records: a line merge where the sides do not touch, ours where they do;
    an access journal file (append-only, one access a line) keeps both sides' lines."""
    base, ours, theirs = texts.get(1), texts.get(2), texts.get(3)
    if ours is None or theirs is None:
        _write(git, root, path, ours if ours is not None else theirs)
        return {"path": path, "kind": "kept_edit", "message": "deleted on one side: the change is kept"}
    base_text = base or ""
    if _is_journal(root, path) and ours.startswith(base_text) and theirs.startswith(base_text):
        _write(git, root, path, ours + theirs[len(base_text):])  # append-only: both sides' new lines
        return {"path": path, "kind": "merged_lines", "message": "access journal: both sides' lines kept"}
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for label, text in (("ours", ours), ("base", base or ""), ("theirs", theirs)):
            f = Path(tmp) / label
            f.write_text(text, encoding="utf-8")
            files.append(str(f))
        side = "--union" if _is_journal(root, path) else "--ours"  # a journal someone edited: no line dropped
        merged = git.run("merge-file", "-p", side, *files, check=False).stdout
    _write(git, root, path, merged)
    return {"path": path, "kind": "merged_lines", "message": "line merge; ours where both changed a line"}


def _is_journal(root: Path, path: str) -> bool:
    folder = layout.at(root, journal.JOURNAL_DIR)  # `.access`, a vault's `.memstrata/access`
    return path.startswith(f"{folder}/") and path.endswith(".log") and "/" not in path[len(folder) + 1:]


def _write(git: Git, root: Path, rel: str, text: str) -> None:
    # a vault's file keeps the mode git's merge left it (the user's umask; TeamSync puts a note's own
    # mode back after the merge); the engine's own tree stays private
    atomic_write_text(root / rel, text, root=root, mode=modes.vault_file_mode(root, rel))
    git.run("add", "--", rel)
