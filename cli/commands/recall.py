"""Commands of recall and the vector index: recall, sync, reindex, import."""
from __future__ import annotations

import json
import sys
import time
from typing import Annotated, List, Optional

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit, memory, progress, utf8_stdout, visible
from memstrata.storage.paths import shown_category


def register(app: typer.Typer) -> None:
    app.command("recall")(recall)
    app.command("sync")(sync)
    app.command("reindex")(reindex)
    app.command("import")(import_)


def recall(
    query: Annotated[Optional[str], typer.Argument(help="What to look for (any language).")] = None,
    k: Annotated[int, typer.Option("-k", "--k", help="How many results at most, any number: a k past the recall_candidates pool (100) widens it, so every entry can come back (one hit per text: copies of a hit's text are passed over); hits under the relevance cut-off are still dropped (--min-relevance 0 keeps them).")] = 10,
    category: Annotated[Optional[str], typer.Option("--category", "-c", help="Only this category and its subcategories.")] = None,
    tier: Annotated[Optional[str], typer.Option("--tier", help="hot, warm, cold or archive.")] = None,
    status: Annotated[Optional[str], typer.Option("--status", help="active, archived or expired.")] = None,
    tag: Annotated[Optional[List[str]], typer.Option("--tag", "-t", help="Required tag (repeatable).")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Written on or after this date (ISO 8601).")] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="Written on or before this date (ISO 8601; a date alone includes that whole day, UTC).")] = None,
    strategy: Annotated[str, typer.Option("--strategy", help="auto, hybrid, vector, text, grep or index.")] = "auto",
    explain: Annotated[bool, typer.Option("--explain", help="Show the signals that ranked each result.")] = False,
    min_relevance: Annotated[Optional[float], typer.Option("--min-relevance",
                             help="Show only hits at least this likely to answer (relevance is a calibrated probability, 0-1; 0 shows all). Default: recall_min_relevance (0.01), which judges the query by its best hit: below it nothing is shown, above it the weaker hits stay.")] = None,
    no_touch: Annotated[bool, typer.Option("--no-touch", help="Do not count the hits as accesses.")] = False,
    no_sessions: Annotated[bool, typer.Option("--no-sessions", help="Leave captured sessions out: the notes only.")] = False,
    include_shared: Annotated[bool, typer.Option("--include-shared",
                              help="Search the shared root too (shared_root in config.md or $MEMSTRATA_SHARED).")] = False,
    queries: Annotated[Optional[str], typer.Option("--queries", help="JSONL file of {\"qid\", \"query\"} lines: "
                                                   "one {\"qid\", \"results\"} JSON line out per query (JSON Lines).")] = None,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="With --queries: JSON Lines, as --queries always answers (said explicitly).")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Find the memories that answer a question: vector + full-text search, fused.

    The output says which strategy answered (grep / index when the index or the model is
    missing).

    Examples:

    \b
      mem recall "which database did we pick?"
      mem recall "深色模式" --category projects --json
      mem recall --queries questions.jsonl --json
    """
    from memstrata.errors import InvalidInput

    m = memory(root)
    options = dict(category=category, tier=tier, status=status, tags=tag, since=since, until=until,
                   strategy=strategy, explain=explain, min_relevance=min_relevance, sessions=not no_sessions)
    if queries is not None:
        if query is not None:
            raise InvalidInput("give a query or --queries FILE, not both")
        items = []
        try:
            with open(queries, encoding="utf-8") as handle:
                for n, line in enumerate(handle, 1):
                    if line.strip():
                        try:
                            items.append(json.loads(line))
                        except ValueError:
                            items.append({"qid": f"line {n}", "error": f"line {n} is not JSON"})
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read {queries}: {getattr(exc, 'strerror', None) or exc}") from None
        if not items:
            raise InvalidInput(f"no queries in {queries}")
        failed = 0
        # JSON Lines whatever the flags (--json and --jsonl alike): one answer per query as it comes,
        # the format scripts and benchmark harnesses have read since --queries exists
        for row in m.recall_batch(items, k=k, **options):
            failed += "error" in row
            sys.stdout.write(json.dumps(row, ensure_ascii=not utf8_stdout()) + "\n")
            sys.stdout.flush()
        if failed:
            sys.stderr.write(f"mem: error: {failed} of {len(items)} queries failed (their answers say why)\n")
            raise typer.Exit(2)
        return
    if query is None:
        raise InvalidInput("give a query (or --queries FILE)")
    if jsonl:
        raise InvalidInput("--jsonl goes with --queries FILE (one answer line per query); a single query: --json")
    result = m.recall(query, k=k, include_shared=include_shared, count_access=not no_touch, **options)
    emit(as_json, result.to_dict(), lambda: _print(result, explain))


def _print(result, explain: bool) -> None:
    typer.echo(f"strategy: {result.strategy}" + (f" ({'; '.join(result.notes)})" if result.notes else ""))
    if result.nothing_relevant:
        typer.echo(f"nothing relevant (best relevance {result.best_relevance:.4f}, below the cut-off "
                   f"{result.min_relevance:g}; --min-relevance 0 shows everything)")
    elif not result.results:
        typer.echo("nothing relevant (no memory matched the query)")
    for n, hit in enumerate(result.results, 1):
        rel = "  -  " if hit.relevance is None else f"{hit.relevance:.2f}"
        origin = f"  shared by {hit.agent or 'another agent'}" if hit.shared_root else ""
        # a captured turn: `mem read ID --turn N --around 2` shows the turns around it
        turn = f" --turn {hit.turn}  ({hit.timestamp or hit.created})" if hit.turn is not None else ""
        typer.echo(f"{n:>2}. {rel}  {visible(hit.title)}  [{visible(shown_category(hit.category))}] {hit.id}{turn}  "
                   f"(score {hit.score:.3f}){origin}")
        d = hit.to_dict()
        typer.echo(f"      {visible(d['snippet'])}")
        if explain and hit.signals:
            for line in _breakdown(hit.signals):
                typer.echo(f"      {line}")


def _breakdown(signals: dict, indent: str = "") -> list[str]:
    """--explain for people: one aligned `name  value` line per signal (nested ones indented)."""
    width = max((len(str(k)) for k in signals), default=0)
    lines = []
    for key, value in signals.items():
        if value is None or value == [] or value == {}:
            continue
        if isinstance(value, dict):
            lines.append(f"{indent}{key}:")
            lines += _breakdown(value, indent + "  ")
        else:
            shown = ", ".join(map(str, value)) if isinstance(value, list) else value
            shown = f"{shown:.4f}".rstrip("0").rstrip(".") if isinstance(shown, float) else shown
            lines.append(f"{indent}{str(key).ljust(width)}  {shown}")
    return lines


def sync(
    name: Annotated[Optional[str], typer.Argument(help="With --remote: the git remote (default origin).",
                                                  show_default=False)] = None,
    remote: Annotated[bool, typer.Option("--remote", help="Also exchange changes with the git remote: commit, "
                                                          "pull, push (docs/team.md).")] = False,
    watch: Annotated[Optional[float], typer.Option("--watch", help="With --remote: sync every SECONDS until "
                                                                   "interrupted (0: the sync_interval "
                                                                   "setting).")] = None,
    root: RootOpt = None, as_json: JsonOpt = False,
):
    """Bring the vector index in line with the tree (files edited by hand, git or other tools).

    Only entries whose text changed are re-embedded; a change of `embedding_model`
    re-embeds everything.

    With --remote [NAME] the tree (a git repository) is also synced with its git remote
    (docs/team.md).

    Examples: mem sync; mem sync --remote; mem sync --remote origin --watch 300
    """
    if remote or name is not None or watch is not None:
        from memstrata.cli.commands.team import sync_remote

        return sync_remote(root, remote, name, watch, as_json)
    m = memory(root)
    started = time.monotonic()
    result = m.sync(progress=progress("embedding", as_json),
                    announce=None if as_json else (lambda msg: sys.stderr.write(msg + "\n")))
    result["seconds"] = round(time.monotonic() - started, 2)
    emit(as_json, result, f"synced: {result['embedded']} embedded, {result['updated']} updated, "
                          f"{result['removed']} removed ({result['model']})" + _unreadable(result["errors"]))
    if not as_json:
        from memstrata.storage.entry_files import unreadable_hint

        for path, why in sorted(result["errors"].items())[:SHOWN_UNREADABLE]:
            said = why.removeprefix(f"{path} is ").removeprefix(f"{path} ")  # the path is named once
            sys.stderr.write(f"mem: warning: {path}: {said}; {unreadable_hint(why)}\n")
        for path, why in sorted(result.get("flagged", {}).items()):
            sys.stderr.write(f"mem: warning: {path}: {why}\n")
        if "allow_file" in result:
            sys.stderr.write(f"mem: warning: {result['allow_file']}\n")


SHOWN_UNREADABLE = 5  # files named one by one after a sync; `mem doctor` lists them all


def _unreadable(errors: dict) -> str:
    """"; 2 unreadable (not in the index): a.md, b.md ..." on sync's summary line ("" when none)."""
    if not errors:
        return ""
    names = sorted(errors)
    more = f" and {len(names) - SHOWN_UNREADABLE} more (`mem doctor` lists them)" if len(names) > SHOWN_UNREADABLE else ""
    return (f"; {len(names)} unreadable, not memories until fixed (then `mem sync`): "
            f"{', '.join(names[:SHOWN_UNREADABLE])}{more}")


def reindex(root: RootOpt = None, as_json: JsonOpt = False):
    """Rebuild the vector index from the tree (every entry re-embedded).

    Example: mem reindex
    """
    m = memory(root)
    started = time.monotonic()
    result = m.reindex(progress=progress("embedding", as_json))
    result["seconds"] = round(time.monotonic() - started, 2)
    emit(as_json, result, f"reindexed {counted(result['embedded'], 'entry', 'entries')} with {result['model']}")


def import_(
    file: Annotated[str, typer.Argument(help="A JSONL file (one entry per line: id, title, body, category, tags, "
                                             "created and any frontmatter field) or a folder (a tree to import).")],
    layout: Annotated[str, typer.Option("--layout", help="auto, jsonl, viking (hot/warm/cold/archive folders) "
                                                         "or pme (categories with INDEX.md and archived/).")] = "auto",
    category: Annotated[Optional[str], typer.Option("--category", "-c",
                                                    help="Put an imported tree under this category.")] = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Bulk-import entries from a JSONL file or another memory tree, embedding them in batches.

    Examples:

    \b
      mem import notes.jsonl
      mem import ~/viking/agent/memories --layout viking
    """
    m = memory(root)
    result = m.import_path(file, layout=layout, progress=progress("importing", as_json), category=category)
    if result["errors"] and not result["imported"] and not result.get("skipped"):
        from memstrata.errors import InvalidInput

        raise InvalidInput(f"nothing imported: {counted(len(result['errors']), 'row')} failed, first: "
                           f"{_where(result['errors'][0])}", errors=result["errors"][:20])
    if not result["imported"] and not result.get("updated") and not result["errors"] and result.get("unchanged"):
        human = (f"nothing to import: all {counted(result['unchanged'], 'entry', 'entries')} of {file} are in this "
                 f"root already, unchanged" + (f" ({result['reindexed']} indexed again)" if result.get("reindexed") else ""))
    else:
        human = (f"imported {counted(result['imported'], 'entry', 'entries')} ({result['embedded']} embedded)"
                 + (f", updated {result['updated']}" if result.get("updated") else "")
                 + (f", {result['skipped']} already here" if result.get("skipped") else "")
                 + (f"; {result['repeated']} repeated an earlier line's id, skipped (first: "
                    f"{next(w for w in result['warnings'] if ' repeats the id ' in w)})" if result.get("repeated") else "")
                 + (f", {result['reindexed']} indexed again" if result.get("reindexed") else "")
                 + (f"; {counted(len(result['errors']), 'row')} not imported ({_where(result['errors'][0])})"
                    if result["errors"] else ""))
    emit(as_json, result, human)
    refused = [e for e in result["errors"] if "line" in e]  # a tree import's skipped files are notices
    if refused:  # a partial import: the rest is in, the report printed, and the exit says some failed
        sys.stderr.write(f"mem: error: {counted(len(refused), 'row')} not imported (first: "
                         f"{_where(refused[0])}; --json lists each); the other rows are in the tree\n")
        raise typer.Exit(2)


def _where(error: dict) -> str:
    """One failed row of an import report: `line 3: why` (a tree import: `path: why`)."""
    return f"{'line ' + str(error['line']) if 'line' in error else error.get('file')}: {error.get('error')}"
