"""The credential scan of a whole tree's records, on the machine's other cores once there is enough to scan.

The workers are plain child processes (`python -P -m memstrata.doctor.secret_worker`) fed batches of records as
JSON lines on their stdin; each answers with the keys of the records in which the guard
(storage.secrets.scan_fields) finds anything. Not `multiprocessing`: its spawned workers import the
caller's main module again, which runs a script that calls `Memory.doctor()` at its top level once more
in every worker. A worker that cannot start, dies or answers nonsense leaves its batch to this process.
"""
from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys

MIN_CHARS = 20_000_000  # scanned here first (about 4 s): a small tree never starts a worker
BATCH_CHARS = 1_000_000  # one task of a worker (about 0.2 s)
MAX_WORKERS = 4


def dirty_keys(batch: list) -> list:
    """The keys of the `[key, fields]` records in which the guard finds anything."""
    from memstrata.storage.secrets import scan_fields

    return [key for key, fields in batch if scan_fields(fields)]


def _chars(fields: dict) -> int:
    return sum(len(v) if isinstance(v, str) else sum(len(str(i)) for i in v) if isinstance(v, (list, tuple)) else 0
               for v in fields.values())


class _Worker:
    def __init__(self):
        from memstrata.storage import secrets

        # -P: not the current folder first on the path (a `json.py` there would run); and the worker
        # answers only if it imported this very code (secret_worker.main)
        self.proc = subprocess.Popen([sys.executable, "-P", "-m", "memstrata.doctor.secret_worker",
                                      os.path.realpath(__file__), os.path.realpath(secrets.__file__)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True)  # Ctrl-C is the caller's: it stops the workers
        self.batch: list | None = None

    def send(self, batch: list) -> None:
        self.batch = batch
        self.proc.stdin.write(json.dumps(batch, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def answer(self) -> list:
        line = self.proc.stdout.readline()
        keys = json.loads(line)
        if not isinstance(keys, list):
            raise ValueError("not a list")
        self.batch = None
        return keys

    def stop(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - gone already
            pass
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except Exception:  # noqa: BLE001 - a broken pipe to a dead worker
                pass


class SecretScan:
    """Records scanned for credentials as they are given (`add`); `finish` returns the keys of those that
    hold something, scanned by the guard's own code wherever they run. Use it as a context manager:
    leaving it (Ctrl-C, an error) stops the workers."""

    def __init__(self, workers: int | None = None, min_chars: int = MIN_CHARS):
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self.workers = min(MAX_WORKERS, usable) if workers is None else workers
        self.min_chars = min_chars
        self.dirty: list = []
        self.answered = 0  # batches the workers scanned
        self._here = 0  # characters scanned in this process before the workers took over
        self._pool: list[_Worker] = []
        self._batch: list = []
        self._batch_chars = 0

    def __enter__(self) -> "SecretScan":
        return self

    def __exit__(self, *exc) -> None:
        for worker in self._pool:
            worker.stop()
        self._pool = []

    def add(self, key, fields: dict) -> None:
        size = _chars(fields)
        if self.workers < 2 or self._here + size <= self.min_chars:
            self._here += size
            self.dirty.extend(dirty_keys([(key, fields)]))
            return
        self._batch.append((key, fields))
        self._batch_chars += size
        if self._batch_chars >= BATCH_CHARS:
            self._send()

    def finish(self) -> list:
        """The keys of every record given that holds something, once all are scanned."""
        if self._batch:
            self._send()
        while any(w.batch is not None for w in self._pool):
            self._collect()
        return self.dirty

    def _send(self) -> None:
        batch, self._batch, self._batch_chars = self._batch, [], 0
        if not self._start():
            self.dirty.extend(dirty_keys(batch))
            return
        idle = [w for w in self._pool if w.batch is None]
        while not idle:
            idle = self._collect()
            if not self._pool:  # every worker failed
                self.dirty.extend(dirty_keys(batch))
                return
        try:
            idle[0].send(batch)
        except Exception:  # noqa: BLE001 - it died: this process scans the batch
            self._drop(idle[0])
            self.dirty.extend(dirty_keys(batch))

    def _collect(self) -> list:
        """Wait for a busy worker's answer; the workers idle now."""
        busy = {w.proc.stdout: w for w in self._pool if w.batch is not None}
        with selectors.DefaultSelector() as sel:
            for pipe in busy:
                sel.register(pipe, selectors.EVENT_READ)
            ready = [busy[key.fileobj] for key, _ in sel.select()]
        for worker in ready:
            try:
                self.dirty.extend(worker.answer())
                self.answered += 1
            except Exception:  # noqa: BLE001 - it died or answered nonsense: scanned here instead
                self.dirty.extend(dirty_keys(worker.batch or []))
                self._drop(worker)
        return [w for w in self._pool if w.batch is None]

    def _start(self) -> bool:
        """Start the workers (once); False when there are none to be had."""
        if not self._pool and self.workers >= 2:
            for _ in range(self.workers):
                try:
                    self._pool.append(_Worker())
                except Exception:  # noqa: BLE001 - no process to be had: fewer workers
                    break
            if not self._pool:
                self.workers = 1
        return bool(self._pool)

    def _drop(self, worker: _Worker) -> None:
        worker.stop()
        self._pool.remove(worker)
        if not self._pool:
            self.workers = 1
