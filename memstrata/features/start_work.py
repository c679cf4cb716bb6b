"""What the project was doing: the session start brings back the memories its last session needs.

At a session start (the SessionStart hook with `--promote`) the session knows its project (the hook's
`cwd`) and, once sessions are captured, that project's last session (scoring/current_task.py). The
block is printed first, from the catalog with no model (features/start_block.py); then, when the
project has a captured session before this one, a process of its own (features/start_followup.py,
through the warm service when one runs) promotes the cold and archived memories the last session's
prompts need, with the rule promotion uses for a prompt, never another project's memory nor a
captured session. What it brought back is injected at the session's next prompt (and, hot now, is in
the next session start's block). The hook never waits for it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

LOG = "start-followup.log"   # under .cache/hook-sessions/: what the background promotions did
LOG_MAX_BYTES = 256 * 1024


class StartWork:
    """`Memory.promote_last_session`: the engine side (promotion needs the model)."""

    def __init__(self, state, entries, promotion):
        self.state, self.entries, self.promotion = state, entries, promotion

    def promote_last_session(self, cwd: str | None, session_id: str | None = None, dry_run: bool = False) -> dict:
        """Promote what the last captured session of `cwd`'s project needs (not session `session_id`,
        the one starting now), each of its last prompts a context (start_promote_prompts), at most
        start_promote_max memories in all, only the project's own and general ones. With a
        `session_id`, what came back is noted for that session's next prompt."""
        from memstrata.features import hook_sessions
        from memstrata.retrieval.prompts import has_topic
        from memstrata.retrieval.table import indexed_form
        from memstrata.scoring import current_task
        from memstrata.scoring.project_scope import may_promote

        settings = self.state.settings
        catalog = self.state.catalog
        catalog.refresh()
        scope = scope_at(cwd, catalog, settings)
        report: dict = {"project": sorted(scope.names) if scope is not None else [], "last_session": None,
                        "prompts": [], "promoted": [], "dry_run": dry_run}
        last = current_task.last_session(project_sessions(catalog, settings, scope), scope, session_id)
        if last is not None and settings.start_promote_prompts > 0 and settings.start_promote_max > 0:
            full = indexed_form(self.state.root, self.entries.resolve(last.path))
            report["last_session"] = {"id": last.id, "path": last.path, "title": last.title}
            report["prompts"] = current_task.task_prompts(full.body, settings.start_promote_prompts, has_topic)
            seen: set = set()
            for prompt in report["prompts"]:
                left = settings.start_promote_max - len(report["promoted"])
                if left <= 0:
                    break
                done = self.promotion.promote(prompt, max_count=left, dry_run=dry_run,
                                              allow=lambda e: may_promote(e, scope) and e.id not in seen)
                for row in done["promoted"]:
                    seen.add(row["id"])
                    report["promoted"].append({**row, "prompt": prompt})
        if session_id and not dry_run:
            hook_sessions.note_followup(self.state.root, session_id, "done", [r["id"] for r in report["promoted"]])
        return report


def scope_at(cwd: str | None, catalog, settings):
    """The session's project (scoring.project_scope.Scope) for the folder it runs in, or None: the
    names of the cwd's git repository (or folder) and the projects the tree's categories name."""
    from memstrata.capture.project import names_of
    from memstrata.scoring import project_scope

    names, in_repository = names_of(cwd)
    if not names:
        return None
    known = project_scope.known_projects(catalog.category_counts(), settings.project_folders,
                                         settings.capture_category)
    return project_scope.scope_of(names, in_repository, known)


def brought_items(entries, ids: list[str]) -> list[tuple]:
    """(entry, "brought", 0.0, False) of each id the session start brought back that still resolves,
    as autoload's fill takes them (features/autoload_fill.py): after the prompt's relevant hits."""
    items = []
    for entry_id in ids:
        try:
            items.append((entries.resolve(entry_id), "brought", 0.0, False))
        except Exception:  # noqa: BLE001 - gone since (deleted, forgotten): nothing to inject
            continue
    return items


def brought_entry(entries, item, now, settings):
    """The entry to show for a brought-back item: its file read now, in the tier it is in now; None
    when it is no longer active (archived again, expired)."""
    from memstrata.scoring.promotion import current_tier

    entry = entries.resolve(item.id)
    if entry.status != "active":
        return None
    entry.tier = current_tier(entry, now, settings)
    return entry


def due(root, catalog, settings, call) -> bool:
    """Whether a session start (`call`: features/hook_call.HookCall) has background work: its project
    has a captured session before this one, and none was started for this session yet (a resume,
    /clear or compaction fires SessionStart again). Catalog rows only: no model, no file read."""
    from memstrata.features import hook_sessions
    from memstrata.scoring import current_task

    if not (call.session and call.cwd) or settings.start_promote_prompts <= 0 or settings.start_promote_max <= 0:
        return False
    if hook_sessions.followup(Path(root), call.session) is not None:
        return False
    scope = scope_at(call.cwd, catalog, settings)
    return current_task.last_session(project_sessions(catalog, settings, scope), scope, call.session) is not None


def project_sessions(catalog, settings, scope) -> list:
    """The catalog rows of the sessions captured in the scope's project (`<capture_category>/<name>/`)."""
    if scope is None:
        return []
    base = str(settings.capture_category).strip("/")
    return [e for name in sorted(scope.names) for e in catalog.entries(category=f"{base}/{name}")]


def spawn(root, call) -> int | None:
    """Start `python -m memstrata.features.start_followup` for the session, detached (own session, no
    terminal, none of the hook's descriptors: the agent never waits for it); its output goes to LOG."""
    import subprocess

    from memstrata.features import hook_sessions
    from memstrata.storage import layout

    folder = layout.path(root, hook_sessions.FOLDER)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / LOG
        if log.exists() and log.stat().st_size > LOG_MAX_BYTES:
            log.unlink()
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    except OSError:
        out = subprocess.DEVNULL
    try:
        hook_sessions.note_followup(Path(root), call.session, "spawned")
        child = subprocess.Popen([sys.executable, "-m", "memstrata.features.start_followup", "--root", str(root),
                                  "--cwd", call.cwd, "--session", call.session],
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=out, close_fds=True,
                                 start_new_session=True, cwd="/")
        return child.pid
    except OSError:
        return None
    finally:
        if out != subprocess.DEVNULL:
            os.close(out)


def after_start(root, catalog, settings, call) -> None:
    """The session start's background work, when due: started, never waited for; never an error."""
    try:
        if due(root, catalog, settings, call):
            spawn(root, call)
    except Exception:  # noqa: BLE001 - the block is printed already; a hook never fails the agent
        pass
