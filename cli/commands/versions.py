"""Versions and tree shape: history, revert, split, merge, import-builtin."""
from __future__ import annotations

from typing import Annotated, Optional

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit, memory, table, visible


def register(app: typer.Typer) -> None:
    app.command("history")(history)
    app.command("revert")(revert)
    app.command("split")(split)
    app.command("merge")(merge)
    app.command("import-builtin")(import_builtin)


def history(
    ref: Annotated[str, typer.Argument(help="Entry id or path.")],
    show: Annotated[Optional[int], typer.Option("--show", help="Print version N in full.")] = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """List the versions of an entry, or print one in full with --show N.

    Examples:

    \b
      mem history 3f2a9c1b7d4e
      mem history 3f2a9c1b7d4e --show 1
    """
    m = memory(root)
    if show is not None:
        from memstrata.clock import format_datetime

        entry = m.version(ref, show)
        data = {"id": entry.id, "version": show, "title": entry.title, "tags": list(entry.tags),
                "updated": format_datetime(entry.updated), "body": entry.body}
        emit(as_json, data, lambda: typer.echo(entry.body, nl=not entry.body.endswith("\n")))
        return
    rows = m.history(ref)
    entry_id = m.resolve(ref).id

    def human():
        for row in rows:
            mark = "*" if row["current"] else " "
            kept = "" if row["available"] else "  (body not kept)"
            typer.echo(f"{mark} v{row['version']}  {row['date']}  {row['summary']}{kept}")

    emit(as_json, {"id": entry_id, "versions": rows}, human)


def revert(
    ref: Annotated[str, typer.Argument(help="Entry id or path.")],
    to: Annotated[int, typer.Option("--to", help="The version to make current again.")],
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Make an old version current again; the revert is itself a new version.

    Example: mem revert 3f2a9c1b7d4e --to 1
    """
    result = memory(root).revert(ref, to)

    def human():
        for warning in result.warnings:
            typer.echo(f"warning: {warning}", err=True)
        typer.echo(f"{result.message} [{result.id}]")

    emit(as_json, result.to_dict(), human)


def split(
    category: Annotated[str, typer.Argument(help="The category to split, e.g. projects.")],
    by: Annotated[str, typer.Option("--by", help="status, year, month or tag (the first tag).")] = "year",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the moves without making them.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Move a category's own entries into subcategories (ids kept, indexes updated).

    Examples:

    \b
      mem split projects --by year --dry-run
      mem split projects --by tag
    """
    data = memory(root).split(category, by=by, dry_run=dry_run)
    emit(as_json, data, lambda: _print_moves(data, "would move" if dry_run else "moved",
                                             f"into {len(data['subcategories'])} subcategories by {by}"))


def merge(
    category: Annotated[str, typer.Argument(help="The category whose subcategories go back into it.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the moves without making them.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Undo a split: move the entries of its subcategories back into the category.

    Without a split record, every subcategory of CATEGORY is merged into it.

    Example: mem merge projects
    """
    data = memory(root).merge(category, dry_run=dry_run)
    emit(as_json, data, lambda: _print_moves(data, "would move" if dry_run else "moved",
                                             f"back into {data['category']}"))


def _print_moves(data: dict, verb: str, tail: str) -> None:
    table([{"id": m["id"], "from": m["from"], "to": m["to"]} for m in data["moves"]], ["id", "from", "to"])
    typer.echo(f"{verb} {counted(data['moved'], 'entry', 'entries')} {tail}")


def import_builtin(
    path: Annotated[str, typer.Argument(help="An agent's own memory file (MEMORY.md, CLAUDE.md, ...).")],
    category: Annotated[Optional[str], typer.Option("--category", "-c",
                        help="Where the sections go (default: imported/<file stem>).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be imported.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Import an agent's own MEMORY.md / CLAUDE.md one way, one entry per section.

    The file is only read, never written. Running it again adds nothing; sections changed
    in the file since become new versions of their entries.

    Example: mem import-builtin ~/.claude/CLAUDE.md
    """
    data = memory(root).import_builtin(path, category=category, dry_run=dry_run)

    def human():
        typer.echo(f"{data['sections']} sections of {data['source']} -> {data['category']}: "
                   f"{len(data['created'])} new, {len(data['updated'])} updated, "
                   f"{len(data['unchanged'])} unchanged, {len(data['skipped'])} skipped"
                   + (" (dry run)" if dry_run else ""))
        for item in data["skipped"]:
            typer.echo(f"  skipped {visible(item['title'])!r}: {item['reason']}")

    emit(as_json, data, human)
