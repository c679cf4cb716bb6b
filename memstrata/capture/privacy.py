"""Captured sessions are personal: kept out of team sync unless capture_team_sync says otherwise, and
`mem capture --forget` removes one everywhere (through the trash; `--purge`: at once, index included)."""
from __future__ import annotations

import os
from datetime import timedelta

from memstrata.capture import sessions
from memstrata.capture.plan import SessionIndex
from memstrata.capture.state import CaptureState
from memstrata.errors import InvalidInput, NotFound
from memstrata.storage import layout, trash
from memstrata.storage.entry_files import read_entry_file

EXCLUDE_BEGIN = "# memstrata: captured sessions stay on this machine (capture_team_sync: false)"
EXCLUDE_END = "# memstrata: end of captured sessions"
FORGET_REASON = "forgotten: mem capture --forget"


# -- team sync ------------------------------------------------------------------------------------
def personal_patterns(root, settings) -> list[str]:
    """gitignore patterns of what capture writes: the sessions' folder, their full texts and versions."""
    category = settings.capture_category.strip("/")
    full, kept = layout.at(root, ".full"), layout.at(root, ".versions")
    return [f"/{category}/", f"/{full}/{sessions.ID_PREFIX}*", f"/{kept}/{sessions.ID_PREFIX}*/"]


def keep_personal(root, settings, git) -> list[str]:
    """Before a team sync stages the tree: the git repository's own exclude file (.git/info/exclude,
    never shared, never the user's .gitignore) lists the captured sessions, unless capture_team_sync
    is on. The patterns, or [] when sessions are shared."""
    path = git.git_dir() / "info" / "exclude"
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError):
        return []
    kept = _without_block(text)
    patterns = [] if settings.capture_team_sync else personal_patterns(root, settings)
    wanted = kept + (("\n" if kept and not kept.endswith("\n") else "") + "\n".join([EXCLUDE_BEGIN, *patterns,
                                                                                   EXCLUDE_END]) + "\n"
                     if patterns else "")
    if wanted != text:
        from memstrata.storage.atomic import atomic_write_text

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, wanted)
    return patterns


def untrack_personal(root, settings, git) -> None:
    """Captured sessions a commit of an earlier sync (or a peer) holds leave the team's tree (the files
    stay here), unless capture_team_sync is on."""
    if settings.capture_team_sync:
        return
    paths = [p.strip("/").rstrip("*").rstrip("/") for p in personal_patterns(root, settings)]
    tracked = [p for p in git.out("ls-files", "-c", "-z", "--", f"{paths[0]}/", f":(glob){paths[1]}*",
                                  f":(glob){paths[2]}*/**").split("\0") if p]
    if tracked:
        git.run("rm", "-q", "-r", "--cached", "--ignore-unmatch", "--", *tracked)


def _without_block(text: str) -> str:
    if EXCLUDE_BEGIN not in text:
        return text
    head, _, rest = text.partition(EXCLUDE_BEGIN)
    _, _, tail = rest.partition(EXCLUDE_END)
    return (head.rstrip("\n") + "\n" if head.strip() else "") + tail.lstrip("\n")


# -- forget ---------------------------------------------------------------------------------------
def forget(capture, ref: str, purge: bool = False) -> dict:
    """Remove a captured session (every part) from the tree and its index: to the trash (restorable,
    `mem restore ID`, until purged), titled only by its agent and id; `purge`: deleted at once, with
    its full texts and versions, and the index's old versions and derived caches rewritten without it.
    Its id is noted so that the next hook of a session still running does not capture it again."""
    state = capture.state
    root = state.root
    index = SessionIndex(root, state.catalog, state.settings.capture_category)
    try:
        agent, session = _find(index, ref)
    except NotFound:
        if purge and (done := _purge_forgotten(capture, ref)) is not None:
            return done  # forgotten before, purged now: its trash copies and every trace in the index
        raise
    parts = index.parts(agent, session)
    if not parts:
        raise NotFound(f"no captured session {ref!r}")
    every = sessions.sessions_of(parts[0])
    now = state.now()
    moved = []
    with state.lock():
        for part in parts:
            entry = read_entry_file(root, index.entries[part.id].path)  # its body goes to the trash with it
            neutral = entry.copy(title=neutral_title(agent, session))
            rel = trash.move_to_trash(root, neutral, FORGET_REASON, now, reported=True)
            state.catalog.forget(entry.path)
            moved.append({"id": entry.id, "path": entry.path, "trash": rel})
        capture.save.index.remove([m["id"] for m in moved])
        capture.save.write_indexes(list({e.category for e in parts}))
        CaptureState(root).forget(agent, every, now.isoformat())
        result = {"agent": agent, "session": session, "sessions": every, "entries": moved, "purged": False}
        if purge:
            ids = {m["id"] for m in moved}
            trash.purge(root, now, state.settings, everything=True, only_ids=ids)
            result["purged"] = True
            result["index_compacted"] = _scrub_index(state)
            _vacuum(state.catalog.db_path)
    return result


_FORGOTTEN = "forgotten session "


def neutral_title(agent: str, session: str) -> str:
    """The title a forgotten session's trash copy keeps: its agent and the first characters of its id only."""
    return f"{_FORGOTTEN}{agent} {session[:8]}"


def _purge_forgotten(capture, ref: str) -> dict | None:
    """`--forget REF --purge` of a session forgotten before: the trash copies `--forget` made of it (by
    entry id, or by the session id's first characters their title keeps) deleted at once, the index
    and the catalog scrubbed as a purge does. None when the trash holds none."""
    state = capture.state
    ref = str(ref or "").strip()
    items = [i for i in trash.list_trash(state.root) if i.reason == FORGET_REASON and not i.damaged
             and (i.id == ref or (len(ref) >= 4 and i.title.endswith(neutral_title("", ref)[len(_FORGOTTEN):])))]
    if not items:
        return None
    with state.lock():
        ids = {i.id for i in items}
        trash.purge(state.root, state.now(), state.settings, everything=True, only_ids=ids)
        result = {"agent": None, "session": ref, "sessions": [], "purged": True,
                  "entries": [{"id": i.id, "path": i.trashed_from, "trash": i.path} for i in items],
                  "index_compacted": _scrub_index(state)}
        _vacuum(state.catalog.db_path)
    return result


def _find(index: SessionIndex, ref: str) -> tuple[str, str]:
    """(agent, session) of a session id, a unique prefix of one, or a session entry's id or path."""
    ref = str(ref or "").strip()
    if not ref:
        raise InvalidInput("say which session: its id (or the first characters of it), or its entry's id or path")
    keys = list(index.by_session)
    exact = [k for k in keys if k[1] == ref]
    if len(exact) == 1:
        return exact[0]
    for entry in index.entries.values():
        if ref in (entry.id, entry.path) or (entry.path and entry.path.endswith("/" + ref)):
            return entry.agent or "", str(entry.extra.get("session"))
    near = [k for k in keys if k[1].startswith(ref)] if len(ref) >= 4 else []
    if len(near) == 1:
        return near[0]
    if len(exact) + len(near) > 1:
        raise InvalidInput(f"{ref!r} names {len(exact) + len(near)} sessions; give more of the id")
    raise NotFound(f"no captured session {ref!r} (`mem list --category {index.category}` shows them)")


def _scrub_index(state) -> bool:
    """The vector table without any trace of removed rows: fragments rewritten without them, the ANN
    index dropped, every older version and unreferenced file removed, the full-text and scalar indexes
    rewritten (LanceDB's whole `optimize`), derived caches dropped.
    Caller holds the tree lock (every write of the table takes it). False when there is no table."""
    index = state.vector_index()
    table = index.table()
    if table is None:
        return False
    import warnings

    with warnings.catch_warnings():  # deprecated spellings, and "concurrent readers of old versions fail":
        warnings.simplefilter("ignore")  # meant here (the tree lock is held; readers open the latest again)
        from memstrata.retrieval import ann

        ann.drop_vector_index(index)  # the next upkeep builds it from the rows left
        table.compact_files(materialize_deletions=True, materialize_deletions_threshold=0.0)
        table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
        table.cleanup_old_versions(timedelta(0), delete_unverified=True)
    from memstrata.retrieval.stats_cache import CACHE_FILE

    cached = index.dir / CACHE_FILE
    try:
        os.unlink(cached)
    except OSError:
        pass
    state.forget_vector_index()
    return True


def _vacuum(db_path) -> None:
    """The catalog's SQLite file rewritten and its write-ahead log emptied, so no page that held the
    session's row is left."""
    import sqlite3

    try:
        conn = sqlite3.connect(str(db_path), timeout=30)
        try:
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    except sqlite3.Error:
        pass
