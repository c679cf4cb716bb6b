"""How the CLI speaks: JSON for agents, short readable text for people, one-line errors."""
from __future__ import annotations

import json
import re
import sys
from typing import Annotated, Callable, Optional

import typer

RootOpt = Annotated[Optional[str], typer.Option("--root", help="Memory root (default: $MEMSTRATA_HOME, else ~/memory).",
                                                show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]


def _default(value):
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def utf8_stdout() -> bool:
    """Whether stdout writes UTF-8 (else --json escapes every non-ASCII character: valid JSON that
    any encoding carries; PYTHONIOENCODING=latin-1 made a note's dash an internal error)."""
    return (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "").replace("_", "") == "utf8"


def tolerant_streams() -> None:
    """stdout and stderr in an encoding other than UTF-8 write what it cannot hold as backslash
    escapes (a note's '—' or '東京' in latin-1), instead of failing half-way through an answer."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "") != "utf8":
                stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass  # not a text stream of io's (a test's capture): left as it is


def print_json(data) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=not utf8_stdout(), indent=2, default=_default) + "\n")


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """'1 entry', '2 entries': a count with its noun in the right number."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def emit(as_json: bool, data, human: Callable[[], None] | str | None = None) -> None:
    """Print `data` as JSON, or call/print the human rendering."""
    if as_json:
        print_json(data)
    elif callable(human):
        human()
    elif human is not None:
        typer.echo(human)


# Characters that change how the text around them reads or that show as nothing: bidi embeddings,
# overrides and isolates (an RLO makes "Invoice \u202egnp.exe" read "Invoice exe.png"), zero-width
# spaces and joiners of no script, the BOM, the soft hyphen; and control characters but tab (an
# escape sequence in a hand-edited title would drive the terminal, a newline forge a line of output).
# In what is shown to people (titles, snippets, table cells) each is written as its escape, `\u202e`;
# --json and the files keep them.
_HIDDEN = re.compile("[\u00ad\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
                     "\x00-\x08\x0a-\x1f\x7f-\x9f]")


def visible(text) -> str:
    """`text` with every character of _HIDDEN written as `\\uXXXX`, for people to see what is there."""
    return _HIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}", "" if text is None else str(text))


def table(rows: list[dict], columns: list[str], title: str | None = None) -> None:
    """A compact table for people (rich when on a terminal, plain columns otherwise)."""
    if not rows:
        typer.echo("(nothing)")
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(soft_wrap=True)
    grid = Table(title=title, show_edge=False, header_style="bold")
    for column in columns:
        # dates, ids, counts and bars are never split across lines; titles and paths fold
        whole = column in _UNSPLIT or column.endswith(("_at", "date", "id", "updated", "created"))
        grid.add_column(column, no_wrap=whole, overflow="ellipsis" if whole else "fold")
    for row in rows:
        grid.add_row(*[visible(row.get(c, "") if row.get(c) is not None else "") for c in columns])
    console.print(grid)


_UNSPLIT = {"id", "tier", "status", "layer", "entries", "subtree", "active", "archived", "strategy", "bar",
            "version", "score", "relevance", "updated", "created", "date", "count"}


def bar(value: float, largest: float, width: int = 20) -> str:
    """An inline bar for people: `value` of `largest` as up to `width` block characters."""
    if largest <= 0 or value <= 0:
        return ""
    return "█" * max(1, round(width * value / largest))


PROGRESS_SECONDS = 5.0  # a line on a stderr that is not a terminal at most this often (MEMSTRATA_PROGRESS_SECONDS)


def progress(label: str, quiet: bool = False):
    """Progress of a long step on stderr: a bar on a terminal (none when quiet, e.g. --json);
    otherwise (an agent, a script, CI) one line every few seconds, --json or not:
    `label: done/total (pct%), rate/s, about N s left`, and a last line when it ends."""
    if not sys.stderr.isatty():
        return _progress_lines(label)
    if quiet:
        return None

    def show(done: int, total: int) -> None:
        width = 30
        filled = int(width * done / max(total, 1))
        _say(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}" + ("\n" if done >= total else ""))

    return show


def _progress_lines(label: str):
    """The progress callback for a stderr that is no terminal: plain lines, never more often than
    every PROGRESS_SECONDS, so a log or an agent's transcript gets a few lines, not thousands."""
    import os
    import time

    try:
        every = max(0.0, float(os.environ.get("MEMSTRATA_PROGRESS_SECONDS", PROGRESS_SECONDS)))
    except ValueError:
        every = PROGRESS_SECONDS
    state = {"start": None, "first": 0, "last": 0.0, "shown": False, "ended": False, "total": None}

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if state["start"] is None or done < state["first"] or total != state["total"]:  # a first or next step
            state.update(start=now, first=done, last=now, shown=False, ended=False, total=total)
        if state["ended"]:
            return
        end = done >= total
        if not ((now - state["last"] >= every) or (end and state["shown"]) or every == 0):
            return
        # the rate since the last line: a model load or a slow first batch does not weigh on the estimate
        span, moved = now - state["last"], done - state["first"]
        rate = moved / span if span > 0 and moved > 0 else 0.0
        state.update(last=now, first=done, shown=True, ended=end)
        elapsed = now - state["start"]
        tail = ("done" if end else f"about {round((total - done) / rate)} s left" if rate > 0 else "starting")
        _say(f"{label}: {done}/{total} ({100 * done // max(total, 1)}%), {rate:.1f}/s, {elapsed:.0f} s, {tail}\n")

    return show


def _say(text: str) -> None:
    """A progress line; one that cannot be written (stderr piped into `head` and closed) is dropped:
    progress never stops or breaks the work it reports on (an index write was skipped that way)."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


_memory_factory: Callable | None = None


def set_memory_factory(factory: Callable | None) -> None:
    """Where `memory(root)` gets its Memory from (the warm service hands out pooled ones)."""
    global _memory_factory
    _memory_factory = factory


def memory(root: str | None):
    """The Memory for a --root option (cheap: nothing heavy is loaded until used)."""
    if _memory_factory is not None:
        return _memory_factory(root)
    from memstrata.memory import Memory

    return Memory(root)


def read_body(body: str | None, file: str | None, allow_empty: bool = False) -> str | None:
    """A body from the argument, from --file, or from stdin when the argument is '-'."""
    from memstrata.engine.inputs import MAX_BODY_BYTES, decoded
    from memstrata.errors import InvalidInput

    # far past the largest body a memory may have, nothing is read on (`--file /dev/zero` or an
    # endless pipe would fill the memory first); below it, the size limit's own message says more
    most = 8 * MAX_BODY_BYTES
    if file is not None:
        if body not in (None, "-"):
            raise InvalidInput("give the body as an argument or with --file, not both")
        try:
            with open(file, "rb") as handle:
                data = handle.read(most + 1)
        except OSError as exc:
            raise InvalidInput(f"cannot read {file}: {exc.strerror}") from None
        source = str(file)
    elif body == "-":
        data, source = sys.stdin.buffer.read(most + 1), "stdin"
    else:
        if body is None and not allow_empty:
            raise InvalidInput("give a body: an argument, '-' for stdin, or --file F")
        return body
    if len(data) > most:
        raise InvalidInput(f"{source} holds more than {most // (1024 * 1024)} MB; a memory holds at most "
                           f"{MAX_BODY_BYTES // (1024 * 1024)} MB (max_entry_bytes in config.md)")
    return decoded(data, source)

