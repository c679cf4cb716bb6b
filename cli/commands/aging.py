"""Aging: `mem weight`, `mem maintain` (alias `mem compress`), `mem decompress`, `mem review ...`."""
from __future__ import annotations

from typing import Annotated, Optional

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit, memory, table, visible

review_app = typer.Typer(help="Review tracking (spaced repetition): pending_review -> reviewing -> reviewed "
                              "-> mastered; next review after 1, 3, 7, 15, then 30 days; mastered goes to archive. "
                              "Example: mem review mark 3f2a9c1b7d4e reviewed",
                         no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("weight")(weight)
    app.command("maintain")(maintain)
    app.command("compress")(compress)
    app.command("decompress")(decompress)
    app.add_typer(review_app, name="review")


def weight(
    ref: Annotated[str, typer.Argument(help="Entry id or path.")],
    update: Annotated[bool, typer.Option("--update", help="Store the weight in the entry's frontmatter.")] = False,
    context_correlation: Annotated[Optional[float], typer.Option(
        "--context-correlation", help="Relevance to the current context, 0.5-1.5 (default: the entry's own).")] = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Show an entry's weight and each factor of the formula (not counted as an access).

    W = importance_factor x 1/(days+1)^0.3 x ln(access_count+1) x context_correlation.

    Example: mem weight 3f2a9c1b7d4e --context-correlation 1.2 --update
    """
    data = memory(root).weight(ref, update=update, context_correlation=context_correlation)

    def human():
        typer.echo(f"{data['weight']:.4f}  {visible(data['title'])} [{data['id']}]" + ("  (stored)" if data["updated"] else ""))
        # the formula counts at least one access (the write): ln(2) for an entry never read
        accesses = counted(data['access_count'], 'access', 'accesses') + (", the write counts as 1"
                                                                         if data['access_count'] < 1 else "")
        typer.echo(f"  = {data['importance_factor']} ({data['importance_label']}) x {data['decay']} "
                   f"({counted(data['days'], 'day')}) x {data['access_term']} ({accesses}) "
                   f"x {data['context_correlation']} (context)")

    emit(as_json, data, human)


def _maintain(dry_run: bool, root, as_json: bool) -> None:
    report = memory(root).maintain(dry_run=dry_run)
    data = report.to_dict()

    def human():
        if data["changes"]:
            table(data["changes"], ["id", "title", "change", "reason"])
        if data["forgotten"]:
            _forgotten(data["forgotten"], dry_run)
        if data["reported"]:
            typer.echo(f"\nin the trash ({len(data['reported'])}; purged after the date shown unless restored):")
            for item in data["reported"]:
                typer.echo(f"  {visible(item['title'])} [{item['id']}]  {item['reason']}  -> {item['restore']}  "
                           f"(purge after {item['purge_after'][:10]})")
        if data["purged"]:
            typer.echo(f"{'would purge' if dry_run else 'purged'} from the trash:")
            table(data["purged"], ["id", "title", "trashed_from", "days_in_trash"])
        for error in data["errors"]:
            typer.echo(f"warning: {error['path']}: {error['error']}", err=True)
        for row in data["skipped"]:
            typer.echo(f"skipped: {row['path']}: {row['reason']}", err=True)
        typer.echo(_changed_line(data, dry_run))

    emit(as_json, data, human)


def _changed_line(data: dict, dry_run: bool) -> str:
    """What maintain changed, in one line: the lifecycle actions, and the entry files the access
    journal was written into (in an adopted folder those are the user's notes: never "nothing")."""
    parts = [", ".join(f"{k} {v}" for k, v in data["counts"].items())]
    folds = data["accesses_to_fold"] if dry_run else data["accesses_folded"]
    if folds:
        parts.append(f"reads and loads {'to write' if dry_run else 'written'} into the frontmatter of "
                     f"{counted(folds, 'entry', 'entries')} (last_access, access_count, weight; from the access journal)")
    said = "; ".join(p for p in parts if p) or "nothing"
    return f"{'would change' if dry_run else 'changed'}: {said}" + (" (dry run: nothing written)" if dry_run else "")


def _forgotten(rows: list[dict], dry_run: bool) -> None:
    """What maintain forgets, one block a user cannot miss: title, id, why, how to get it back."""
    head = "WOULD FORGET" if dry_run else "FORGOTTEN"
    typer.echo(f"\n{head} {counted(len(rows), 'entry', 'entries')} (moved to the trash, restorable until purged):")
    for row in rows:
        typer.echo(f"  - {visible(row['title'])} [{row['id']}]  from {row['from']}")
        typer.echo(f"      why: {row['kind']}: {row['reason']}")
        typer.echo(f"      get it back: {row['restore']}   (purged after {row['purge_after'][:10]} at the earliest)")
    typer.echo("")


def maintain(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Age the tree: retier, compress (losslessly), archive, expire, forget, purge the trash.

    Archive, forgetting and the purge count only days the tree was in use; what is forgotten is
    listed (FORGOTTEN: title, id, why, `mem restore ID`), and trash is purged only
    trash_retention_days (of use) after it was reported. An entry an editor saves while maintain
    writes it is left as saved and listed as skipped (the next run takes it). Idempotent (a second
    run right after the first changes nothing); safe from cron or at the end of an agent's session.

    Example: mem maintain --dry-run --json
    """
    _maintain(dry_run, root, as_json)


def compress(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Alias of `mem maintain`: age, compress and archive the tree.

    Example: mem compress --dry-run
    """
    _maintain(dry_run, root, as_json)


def decompress(
    ref: Annotated[str, typer.Argument(help="Entry id or path.")],
    show: Annotated[bool, typer.Option("--show", help="Print the full original (not an access).")] = False,
    restore: Annotated[bool, typer.Option("--restore", help="Put the original back byte for byte; the entry "
                                                          "returns to hot.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Show or restore the full original of a compressed entry (kept in .full/).

    Examples:

    \b
      mem decompress 3f2a9c1b7d4e --show
      mem decompress 3f2a9c1b7d4e --restore --json
    """
    from memstrata.errors import InvalidInput

    if show == restore:
        raise InvalidInput("say --show or --restore")
    data = memory(root).decompress(ref, show=show, restore=restore)
    if show:
        emit(as_json, data, lambda: typer.echo(data["body"], nl=not data["body"].endswith("\n")))
    else:
        emit(as_json, data, data["message"])


def _review_rows(entries) -> list[dict]:
    from memstrata.clock import format_datetime
    from memstrata.results import entry_summary

    return [{**entry_summary(e), "review_status": e.review_status, "review_count": e.review_count,
             "last_reviewed": format_datetime(e.last_reviewed), "next_review": format_datetime(e.next_review)}
            for e in entries]


_REVIEW_COLUMNS = ["id", "title", "review_status", "review_count", "next_review"]


@review_app.command("mark")
def review_mark(
    ref: Annotated[str, typer.Argument(help="Entry id or path.")],
    status: Annotated[str, typer.Argument(help="pending_review, reviewing, reviewed or mastered.")],
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Set an entry's review status; reviewed schedules the next review, mastered archives it.

    Example: mem review mark 3f2a9c1b7d4e reviewed
    """
    data = memory(root).review_mark(ref, status)
    text = f"{data['id']}: {data['review_status']}"
    if data["next_review"]:
        text += f", next review {data['next_review']}"
    if data["archived"]:
        text += f", archived to {data['path']}"
    emit(as_json, data, text)


@review_app.command("list")
def review_list(
    status: Annotated[Optional[str], typer.Argument(help="Only this review status (default: all tracked).")] = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """List entries tracked for review, by next review date.

    Example: mem review list reviewing --json
    """
    rows = _review_rows(memory(root).review_list(status))
    emit(as_json, {"count": len(rows), "entries": rows}, lambda: table(rows, _REVIEW_COLUMNS))


@review_app.command("due")
def review_due(root: RootOpt = None, as_json: JsonOpt = False):
    """List entries due for review now, most overdue first.

    Example: mem review due --json
    """
    rows = _review_rows(memory(root).review_due())
    emit(as_json, {"count": len(rows), "entries": rows}, lambda: table(rows, _REVIEW_COLUMNS))


@review_app.command("stats")
def review_stats(root: RootOpt = None, as_json: JsonOpt = False):
    """Counts per review status and how many are due.

    Example: mem review stats
    """
    data = memory(root).review_stats()
    emit(as_json, data, lambda: typer.echo(
        ", ".join(f"{k} {v}" for k, v in data["statuses"].items()) + f"; due now {data['due']}"))
