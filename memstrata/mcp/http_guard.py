"""Limits of `mem mcp --http` against hostile clients: a header deadline, a connection cap, a log that cannot flood.

- Header deadline: a connection that has not sent a whole request within `header_seconds` of
  opening (or of its last answer) is closed. uvicorn has no such timeout: a client sending
  partial headers held its connection, and a file descriptor, for ever (issue 27).
- Connection cap: past `max_connections` open connections a new one takes the place of the
  oldest connection that is not being answered (a half-open one, most likely), else it is
  closed at once. So a flood of half-open connections cannot lock out the client with the
  token, and descriptors stay far below the process limit. (asyncio itself backs off for a
  second when `accept` runs out of descriptors; its error line goes through the same log.)
- The log: every line goes through `RateLimit`, at most `per_minute` lines of one kind and
  `total_per_minute` lines in all each minute; what was held back is counted in the next line.
"""
from __future__ import annotations

import logging
import time

LOG = logging.getLogger("memstrata.mcp.http")


def guarded_protocol(header_seconds: float, max_connections: int):
    """uvicorn's h11 protocol class with the header deadline and the connection cap."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11(H11Protocol):
        _deadline = None
        _since = 0.0
        _seen = None

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._since = self.loop.time()
            if len(self.connections) > max_connections and not self._make_room():
                LOG.warning("connection cap (%d) reached and every connection is busy: a new one was closed",
                            max_connections)
                transport.close()
                return
            self._deadline = self.loop.call_later(header_seconds, self._check)

        def _busy(self) -> bool:
            return self.cycle is not None and not self.cycle.response_complete

        def _make_room(self) -> bool:
            idle = [c for c in self.connections if c is not self and isinstance(c, GuardedH11) and not c._busy()
                    and not c.transport.is_closing()]
            if not idle:
                return False
            victim = min(idle, key=lambda c: c._since)
            LOG.warning("connection cap (%d) reached: closed the oldest connection without a request",
                        max_connections)
            victim.transport.close()
            return True

        def _check(self) -> None:
            if self.transport.is_closing():
                return
            now = self.loop.time()
            if self._busy() or self.cycle is not self._seen:  # being answered (an event stream too), or answered
                self._seen, self._since = self.cycle, now
            waited = now - self._since
            if waited >= header_seconds:
                LOG.warning("closed a connection that sent no whole request in %d s", header_seconds)
                self.transport.close()
                return
            self._deadline = self.loop.call_later(header_seconds - waited, self._check)

        def connection_lost(self, exc) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

    return GuardedH11


class RateLimit(logging.Filter):
    """At most `per_minute` records of one kind (logger and message template) and `total_per_minute`
    in all, per minute; the first record let through after a held-back run says how many were held."""

    MAX_KINDS = 1000

    def __init__(self, per_minute: int = 5, total_per_minute: int = 60, clock=time.monotonic):
        super().__init__()
        self.per_minute = per_minute
        self.total_per_minute = total_per_minute
        self.clock = clock
        self.kinds: dict = {}   # kind -> [window start, lines let through, lines held back]
        self.total = [0.0, 0, 0]

    def _take(self, state: list, limit: int, now: float) -> tuple[bool, int]:
        held = 0
        if now - state[0] >= 60.0:
            held = state[2]
            state[:] = [now, 0, 0]
        if state[1] >= limit:
            state[2] += 1
            return False, 0
        state[1] += 1
        return True, held

    def filter(self, record: logging.LogRecord) -> bool:
        now = self.clock()
        kind = (record.name, str(record.msg)[:200])
        if kind not in self.kinds and len(self.kinds) >= self.MAX_KINDS:
            self.kinds.clear()
        state = self.kinds.setdefault(kind, [now, 0, 0])
        ok, held = self._take(state, self.per_minute, now)
        if not ok:
            return False
        ok_total, held_total = self._take(self.total, self.total_per_minute, now)
        if not ok_total:
            state[1] -= 1
            state[2] += 1
            return False
        held = max(held, held_total)
        if held:
            record.msg = f"{record.getMessage()} ({held} more log lines held back in the last minute)"
            record.args = ()
        return True


def quiet_logging(stream) -> logging.Handler:
    """The process's one log handler (on `stream`, warnings and up), rate-limited."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RateLimit())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    return handler
