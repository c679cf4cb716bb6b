"""`mem trash list|purge`: what was deleted or forgotten, and emptying it."""
from __future__ import annotations

from typing import Annotated

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit, memory, table
from memstrata.clock import format_datetime

trash_app = typer.Typer(help="The trash: deleted and forgotten entries, restorable until purged. "
                             "`mem trash` alone lists it.",
                        no_args_is_help=False, invoke_without_command=True)


def register(app: typer.Typer) -> None:
    app.add_typer(trash_app, name="trash")


@trash_app.callback()
def trash(ctx: typer.Context, root: RootOpt = None, as_json: JsonOpt = False):
    """The trash: deleted and forgotten entries, restorable until purged (`mem trash` lists it).

    Examples: mem trash; mem trash list --json; mem trash purge
    """
    if ctx.invoked_subcommand is None:  # a bare `mem trash` does the obvious thing: list it
        trash_list(root, as_json)


@trash_app.command("list")
def trash_list(root: RootOpt = None, as_json: JsonOpt = False):
    """List the entries in the trash (restore one with `mem restore ID`).

    Listing reports them: an item is purged only once it was reported (here or by `mem
    maintain`) and trash_retention_days have passed since, counted in days the tree was in use.

    Example: mem trash list --json
    """
    items = [i.to_dict() for i in memory(root).trash_list()]
    rows = [{"id": i["id"], "title": i["title"], "trashed": (i["trashed_at"] or "")[:10],
             "from": i["trashed_from"], "reported": (i["reported_at"] or "")[:10],
             "reason": ("DAMAGED (cannot be read, kept as it is; `mem doctor`)" + (f"; {i['reason']}" if i["reason"] else "")
                        if i.get("damaged") else i["reason"])}
            for i in items]
    emit(as_json, {"count": len(items), "entries": items},
         lambda: table(rows, ["id", "title", "trashed", "from", "reason", "reported"]))


@trash_app.command("purge")
def trash_purge(
    everything: Annotated[bool, typer.Option("--all", help="Purge everything, not only expired items.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Delete for good the trash entries reported at least once and in the trash more than
    trash_retention_days since (config.md), counted in days the tree was in use (a tree nobody
    used, or a clock moved ahead with MEMSTRATA_NOW, keeps its trash); --all empties the trash.

    Example: mem trash purge
    """
    report = memory(root).trash_purge_report(everything)
    items = [i.to_dict() for i in report["purged"]]
    after = format_datetime(report["purgeable_after"])
    data = {"purged": len(items), "entries": items, "left": report["left"], "unreported": report["unreported"],
            "undated": report["undated"], "waiting": report["waiting"], "purgeable_after": after}
    emit(as_json, data, f"purged {counted(len(items), 'entry', 'entries')}{_why_left(report, after)}")


def _why_left(report: dict, after: str | None) -> str:
    """"; 3 left: ..." on why the items still in the trash were not purged ("" when it is empty)."""
    reasons = []
    if report["waiting"]:
        reasons.append(f"{report['waiting']} reported less than {counted(report['retention_days'], 'day')} of use "
                       f"ago (trash_retention_days; the first purgeable after {after[:10]} at the earliest)")
    if report["unreported"]:
        reasons.append(f"{report['unreported']} not reported yet (`mem trash list` or `mem maintain` reports "
                       f"them; purged {counted(report['retention_days'], 'day')} of use after that)")
    if report["undated"]:
        reasons.append(f"{report['undated']} without a trash date (only --all purges them)")
    return f"; {report['left']} left: " + ", ".join(reasons) if reasons else ""
