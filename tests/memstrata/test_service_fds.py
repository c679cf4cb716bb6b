"""The warm service's file descriptors: a tree closed by the pool never closes a number it no longer owns."""
from __future__ import annotations

import gc
import os

from memstrata import Memory


def test_a_closed_tree_never_closes_another_callers_fd_later(tmp_path, embedder):
    """The root cause of the service's 'Bad file descriptor' and of calls that printed nothing:
    the pool closed a spare instance (its inotify fd freed), another call's stdout or socket got
    that number, then the instance's finalizer closed the number again."""
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    watcher = m.state.watcher()
    assert watcher is not None and watcher.ok
    number = watcher._fd
    m.state.close()                      # what MemoryPool does to a spare or idle instance
    spare = os.open(os.devnull, os.O_RDONLY)
    victim = os.dup2(spare, number)      # another thread's new file gets the freed number
    os.close(spare)
    try:
        del m, watcher
        gc.collect()                     # the instance goes: its finalizer runs
        os.fstat(victim)                 # raises EBADF if the finalizer closed it
    finally:
        os.close(victim)
