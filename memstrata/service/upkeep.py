"""The warm service's background work per open tree: index upkeep after writes, team sync on a timer, idle limits."""
from __future__ import annotations

import os
import threading
import time

from memstrata.service.pool import POOL
from memstrata.service.process import log
from memstrata.service.threads import call_local

MAINTAIN_DELAY = 2.0   # seconds after a call that may have written, with no call running


def has_remote(git_config: str | None, remote: str = "origin") -> bool:
    """Whether a .git/config text names the remote (a tree the timer can sync)."""
    return bool(git_config) and f'[remote "{remote}"]' in git_config


def _git_config(root: str) -> str | None:
    try:
        with open(os.path.join(root, ".git", "config"), encoding="utf-8", errors="replace") as fh:
            return fh.read(65536)
    except OSError:
        return None


class Settings:
    """Each open tree's settings, read again only when its config.md changed."""

    def __init__(self):
        self._cache: dict[str, tuple] = {}
        self._lock = threading.Lock()

    def of(self, root: str):
        from memstrata.storage.config import load_settings

        try:
            st = os.stat(os.path.join(root, "config.md"))
            stamp = (st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
        with self._lock:
            cached = self._cache.get(root)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            settings = load_settings(root)
        except Exception:  # noqa: BLE001 - a broken config.md: defaults for the service's timers
            from memstrata.storage.config import Settings as Defaults

            settings = Defaults()
        with self._lock:
            self._cache[root] = (stamp, settings)
        return settings

    def forget(self, root: str) -> None:
        with self._lock:
            self._cache.pop(root, None)


class Upkeep:
    """Per-root jobs between calls: `ann.maintain` after writes, `sync_remote` every sync_interval s."""

    def __init__(self):
        self._lock = threading.Lock()
        self._maintain_due: dict[str, float] = {}
        self._sync: dict[str, dict] = {}
        self.settings = Settings()

    # -- index upkeep -------------------------------------------------------------------
    def after_write(self, root: str) -> None:
        with self._lock:
            self._maintain_due[root] = time.monotonic() + MAINTAIN_DELAY

    def run_due_maintenance(self) -> None:
        """Maintain the index of every root whose delay passed (call only while no call runs)."""
        now = time.monotonic()
        with self._lock:
            due = [r for r, t in self._maintain_due.items() if t <= now]
            for root in due:
                del self._maintain_due[root]
        for root in due:
            if maintain_index(root) is BUSY:
                self.after_write(root)  # another writer holds the tree: tried again later, quietly

    # -- team sync on a timer -----------------------------------------------------------
    def start_due_syncs(self) -> None:
        """Start `sync_remote` for each open root with sync_interval > 0 and an origin remote,
        when its interval passed since the last round started; never two at once for a root."""
        now = time.monotonic()
        for info in POOL.roots():
            root = info["root"]
            interval = getattr(self.settings.of(root), "sync_interval", 0) or 0
            if interval <= 0 or not has_remote(_git_config(root)):
                with self._lock:
                    self._sync.pop(root, None)
                continue
            with self._lock:
                state = self._sync.setdefault(root, {"interval_s": interval, "running": False, "rounds": 0,
                                                     "last_start": None, "last_ok": None, "error": None,
                                                     "_next": now + interval})
                state["interval_s"] = interval
                if state["running"] or now < state["_next"]:
                    continue
                state["running"] = True
                state["_next"] = now + interval
            threading.Thread(target=self._sync_once, args=(root,), name="team-sync", daemon=True).start()

    def _sync_once(self, root: str) -> None:
        started = time.time()
        error = None
        call_local.memories = {}
        try:
            result = POOL.checkout(root, touch=False).sync_remote("origin")
            if result.get("committed") or result.get("pulled") or result.get("pushed"):
                log(f"team sync of {root}: committed {len(result['committed'])}, pulled {result['pulled']}, "
                     f"{'pushed' if result['pushed'] else 'nothing to push'}")
        except Exception as exc:  # noqa: BLE001 - a failed round is reported and tried again next time
            error = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            log(f"team sync of {root} failed: {error}", None if hasattr(exc, "message") else exc)
        finally:
            POOL.checkin_all()
        with self._lock:
            state = self._sync.get(root)
            if state is not None:
                state.update(running=False, rounds=state["rounds"] + 1, last_start=started, error=error,
                             last_ok=time.time() if error is None else state["last_ok"])
                state["_next"] = time.monotonic() + state["interval_s"]

    def syncing(self) -> bool:
        with self._lock:
            return any(s["running"] for s in self._sync.values())

    def sync_status(self, root: str) -> dict | None:
        with self._lock:
            state = self._sync.get(root)
            return None if state is None else {k: v for k, v in state.items() if not k.startswith("_")}

    def forget(self, root: str) -> None:
        """A closed root: no upkeep or timer for it until it is opened again."""
        with self._lock:
            self._maintain_due.pop(root, None)
            self._sync.pop(root, None)
        self.settings.forget(root)


BUSY = {"busy": True}  # maintain_index's answer when another writer held the tree or raced it


def maintain_index(root: str) -> dict | None:
    """Index upkeep of one root between calls: scalar/ANN indexes, compaction (retrieval/ann.py),
    under the tree lock like every write, taken without waiting; then the recall's in-memory state
    of the new table version (`Memory.warm_up`). A tree another process is writing
    (the lock held, or a LanceDB commit that lost a race with it: "Retryable commit conflict") is
    BUSY: tried again later, without a line in service.log for each try."""
    call_local.memories = {}
    try:
        from memstrata.errors import Locked
        from memstrata.retrieval import ann

        m = POOL.checkout(root, touch=False)
        try:
            with m.state.lock(timeout=0):
                index = m.state.vector_index()
                index.refresh()
                done = ann.maintain(index)
        except Locked:
            return BUSY
        if done.get("actions"):
            log(f"index upkeep of {root}: " + "; ".join(done["actions"]))
        # the written table's frame, texts and statistics loaded now, between calls, rather than by
        # the next prompt's recall (about 4 s at 300,000 captured turns after each capture)
        m.warm_up()
        return done
    except Exception as exc:  # noqa: BLE001 - upkeep is an optimisation; calls still work without it
        if "commit conflict" in str(exc).lower():
            return BUSY
        log(f"index upkeep of {root} failed: {type(exc).__name__}: {exc}", exc)
        return None
    finally:
        POOL.checkin_all()
