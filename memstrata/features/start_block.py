"""The session-start block: what an agent starts with, from the catalog and the weights, with no model.

A session start (the SessionStart hook, `mem autoload` and MCP `autoload` without a context) asks
for nothing in particular: it gets the memories in the order of scoring/start_order.py (weight with
a bonus for a recent write), active ones of every tier, each by its opening, within the budget. No
embedding is needed for that, so the block never waits for the model: the warm service and a cold
process answer it the same way, the budget counted with the model's tokenizer alone
(models/tokens.py). Nothing here counts as a use of an entry (docs/aging.md).
"""
from __future__ import annotations

import heapq
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from memstrata.features.autoload_block import AutoloadResult, Costs
from memstrata.features.autoload_fill import fill
from memstrata.storage.catalog import Catalog
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

SHARED_ENV = "MEMSTRATA_SHARED"
SECTION = "hot"  # the block's "Recent and weighty" section (autoload_block.SECTIONS)
STRONG_MAX = 2000  # strong entries (scoring.start_order.strong) ranked up front; past this many, none is


@dataclass
class Source:
    """One tree the block draws on: its own root, or the shared root (`shared`)."""

    root: Path
    catalog: Catalog  # refreshed by the caller as it sees fit (a warm one by its watcher)
    settings: Settings
    accesses: dict  # the access journal's uses not folded into the entries yet (storage.journal.read)
    shared: bool = False
    only_mine: bool = False  # a shared root's notes are listed only when this user wrote their file


def shared_root_of(root: Path, settings: Settings | None) -> Path | None:
    """The shared root: config.md's shared_root, else $MEMSTRATA_SHARED (relative to `root`); None if neither."""
    from memstrata.storage.tree import resolve_root

    raw = (settings.shared_root if settings is not None else None) or os.environ.get(SHARED_ENV)
    if not raw:
        return None
    path = Path(os.path.expanduser(str(raw)))
    return resolve_root(path if path.is_absolute() else Path(root) / path)


def foreign_reason(root: Path, uid: int | None = None) -> str | None:
    """Why a shared root is not this user's alone (None: it is, or it does not exist yet): another
    user owns it, or every user may write to it."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    uid = os.getuid() if uid is None else uid
    if st.st_uid != uid:
        return f"it is owned by uid {st.st_uid}, not {uid}"
    if st.st_mode & 0o002:
        return "every user can write to it"
    return None


def shared_source_allowed(shared: Path, settings: Settings | None) -> tuple[bool, str | None]:
    """(whether the shared root's notes may be listed at all, why not): a shared root another user owns
    or anyone can write is left out unless the user set shared_from_others."""
    if settings is not None and settings.shared_from_others:
        return True, None
    reason = foreign_reason(shared)
    return reason is None, reason


def ordered(source: Source, now, status: str = "active", scope=None, everything: bool = False
            ) -> Iterator[tuple[Entry, float]]:
    """(entry, start score) of the source's entries of `status`, best first, their journaled uses
    counted; the catalog is read only as far as the caller takes (scoring.start_order.in_order).
    The session's project (`scope`) comes first, other projects' memories and captured sessions are
    left out (scoring.project_scope.start_factor), unless `everything`."""
    from memstrata.scoring import start_order
    from memstrata.scoring.project_scope import start_factor, start_factor_max
    from memstrata.scoring.access import folded
    from memstrata.scoring.weight import CORRELATION_DEFAULT, HIGH_AT

    catalog, settings = source.catalog, source.settings
    first = []
    for entry_id, access in source.accesses.items():  # used lately: later than the catalog's dates say
        for path in catalog.paths_of(entry_id):
            entry = catalog.get(path)
            if entry is not None:
                first.append(folded(entry, access, now, settings))
    first += catalog.undated()
    strength = start_order.STRENGTH_MAX
    strong = catalog.weighty(HIGH_AT, CORRELATION_DEFAULT, STRONG_MAX)
    if len(strong) <= STRONG_MAX:  # the rest then bring a medium importance and a neutral correlation at most
        first += [e for e in strong if not (e.id and e.id in source.accesses)]
        strength = start_order.STRENGTH_PLAIN
    rest = (e for e in catalog.latest_first(status) if not (e.id and e.id in source.accesses))
    first = [e for e in first if e.status == status]
    boost = settings.autoload_project_boost

    def factor(entry: Entry) -> float:
        return start_factor(entry, scope, boost, everything)

    for entry, score in start_order.in_order(first, rest, now, settings, catalog.max_uses(), strength, factor,
                                             start_factor_max(scope, boost, everything)):
        yield entry, score


def start_block(sources: list[Source], budget: int, now, counter, form: str = "markdown",
                cwd: str | None = None) -> AutoloadResult:
    """The block of a session start: every source's active memories by start score (the sources
    merged by it), each by its opening, the whole block within `budget` tokens counted by `counter`
    (models.tokens).

    `cwd` is the folder the session runs in (the hook's `cwd`): its project's memories come first
    (`autoload_project_boost`), with those of no project (preferences, the team); other projects'
    memories and captured sessions are left out (scoring/project_scope.py). Never empty while a
    memory with text exists and the budget holds one: with no active memory that fits, the archived
    ones are listed the same way, and with none of those either, every memory is."""
    result = AutoloadResult(context=None, budget=budget, form=form)
    costs = Costs(counter, form)
    from memstrata.features.start_work import scope_at

    scope = scope_at(cwd, sources[0].catalog, sources[0].settings) if sources else None
    for status, everything in (("active", False), ("archived", False), ("active", True), ("archived", True)):
        fill(result, merged(sources, now, status, scope, everything), costs, resolver(sources, now))
        if result.items:
            break
    return result


def merged(sources: list[Source], now, status: str, scope=None, everything: bool = False) -> Iterator[tuple]:
    """(entry, section, score, shared) of every source, best first (`scope`, `everything`: `ordered`)."""
    def stream(n: int, source: Source):
        return ((-score, n, entry, source.shared) for entry, score in ordered(source, now, status, scope, everything))

    for negative, _n, entry, shared in heapq.merge(*(stream(n, s) for n, s in enumerate(sources)),
                                                   key=lambda t: (t[0], t[1])):
        yield entry, SECTION, -negative, shared


def resolver(sources: list[Source], now):
    """The entry to show for a ranked one: its file read now (its text, and whether it still qualifies),
    with its journaled uses counted and the tier it is in now."""
    from memstrata.scoring.access import folded
    from memstrata.scoring.promotion import current_tier
    from memstrata.storage.catalog import read_entry_file

    by_shared = {source.shared: source for source in sources}

    def resolve(item: Entry, section: str, from_shared: bool) -> Entry | None:
        source = by_shared[bool(from_shared)]
        if source.only_mine and not _written_by_me(source.root, item.path):
            return None  # another user's note in the shared root: never loaded unasked
        entry = read_entry_file(source.root, item.path)
        if entry.id != item.id or entry.status != item.status:
            return None  # changed since the catalog saw it: the next session start has it right
        access = source.accesses.get(entry.id) if entry.id else None
        if access is not None:
            entry = folded(entry, access, now, source.settings)
        entry.tier = current_tier(entry, now, source.settings)
        return entry

    return resolve


def _written_by_me(root: Path, path: str | None) -> bool:
    try:
        return os.lstat(Path(root) / str(path)).st_uid == os.getuid()
    except (OSError, TypeError):
        return False


def sources_at(root: Path, settings: Settings, now, include_shared: bool = True,
               catalog: Catalog | None = None, accesses: dict | None = None) -> list[Source]:
    """The sources of the tree at `root` (with its catalog and journal when the caller holds them
    already) and of its shared root when one is set and is a tree."""
    from memstrata.storage import journal
    from memstrata.storage.config import load_settings
    from memstrata.storage.tree import is_initialised

    if catalog is None:
        catalog = Catalog(root)
        catalog.refresh_if_moved()  # no watcher here: the names of the files, not a stat of each
    own = Source(root, catalog, settings, journal.read(root, now) if accesses is None else accesses)
    shared = shared_root_of(root, settings) if include_shared else None
    if shared is None or shared == root or not is_initialised(shared) or not shared_source_allowed(shared, settings)[0]:
        return [own]
    theirs = Catalog(shared)
    theirs.refresh_if_moved()
    return [own, Source(shared, theirs, load_settings(shared), journal.read(shared, now), shared=True,
                        only_mine=not settings.shared_from_others)]


def answer_hook(root: str, budget: int | None, as_json: bool, call, out, promote: bool = False) -> None:
    """Print on `out` what `mem autoload --hook` prints for a session start (`call`:
    features/hook_call.HookCall), answered in this process from the catalog and the weights: what the
    CLI path (`Memory.autoload` with no context) prints, without typer, the engine's parts or the
    model. The client calls it while the service is cold (service/client.py). With `promote`, the
    promotion for the project's last session is then started in the background (features/start_work.py)."""
    from memstrata import clock
    from memstrata.features import hook_call, hook_sessions
    from memstrata.models.tokens import counter_for
    from memstrata.storage.config import load_settings

    root_path = Path(root)
    settings = load_settings(root_path)
    budget = settings.autoload_budget if budget is None else int(budget)
    if budget < 1:
        return  # the CLI refuses it (InvalidInput), and a hook then prints nothing
    now = clock.now()
    sources = sources_at(root_path, settings, now)
    result = start_block(sources, budget, now, counter_for(settings.embedding_model), cwd=call.cwd)
    hook_sessions.record(root_path, call.session, [i.entry.ref for i in result.items])
    out.write(hook_call.output(call, result.markdown(), as_json, ascii_only=False))
    out.flush()
    if promote:
        from memstrata.features.start_work import after_start

        after_start(root_path, sources[0].catalog, settings, call)
