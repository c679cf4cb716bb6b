"""Cooperative cancellation of a long call: the warm service marks a call cancelled when its caller goes away."""
from __future__ import annotations

import threading

from memstrata.storage.errors import Interrupted

_local = threading.local()


def set_event(event: threading.Event | None) -> None:
    """The event that cancels the calls of this thread (None: nothing cancels them)."""
    _local.event = event


def cancelled() -> bool:
    """True when this thread's call was cancelled (its caller went away)."""
    event = getattr(_local, "event", None)
    return event is not None and event.is_set()


def stop_if_cancelled(what: str = "call") -> None:
    """Raise Interrupted when this thread's call was cancelled: a safe point of a long call."""
    if cancelled():
        raise Interrupted(f"{what} stopped: its caller went away")


def between_runs(progress):
    """The embedder's progress callback, checking between model runs (a run is a few dozen texts,
    a fraction of a CPU second) whether the call was cancelled: the embedding of a batch then stops
    with Interrupted and its rows are never written. `progress` unchanged when nothing can cancel."""
    event = getattr(_local, "event", None)
    if event is None:
        return progress

    def step(done: int, total: int) -> None:
        if event.is_set():
            raise Interrupted("stopped while embedding: its caller went away")
        if progress is not None:
            progress(done, total)

    return step
