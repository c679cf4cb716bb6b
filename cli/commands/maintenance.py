"""`mem stats` and `mem index --rebuild`: the tree as a whole."""
from __future__ import annotations

from typing import Annotated

import typer
from memstrata.cli.output import JsonOpt, RootOpt, emit, memory, table


def register(app: typer.Typer) -> None:
    app.command("stats")(stats)
    from memstrata.cli.commands.team import index_app

    app.add_typer(index_app, name="index")  # `index --rebuild` (below), `index push|pull URI` (team.py)


def stats(root: RootOpt = None, as_json: JsonOpt = False):
    """Counts per category, tier and status, and the retrieval strategy advised per category.

    Example: mem stats --json
    """
    data = memory(root).stats()

    def human():
        typer.echo(f"{data['entries']} entries in {data['root']}; tiers {data['tiers']}; trash {data['trash']}")
        rows = [{"category": c, **r} for c, r in data["categories"].items()]
        table(rows, ["category", "entries", "subtree", "active", "archived", "strategy", "split_advised"])
        for warning in data.get("warnings", []):
            typer.echo(f"warning: {warning}", err=True)
        for path in data["unreadable"]:
            typer.echo(f"warning: cannot parse {path} (see mem doctor)", err=True)

    emit(as_json, data, human)


def index(
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Regenerate every INDEX.md from the files.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Regenerate the INDEX.md files (root and categories) from the entry files.

    Example: mem index --rebuild
    """
    from memstrata.errors import InvalidInput

    if not rebuild:
        raise InvalidInput("say --rebuild to regenerate every INDEX.md")
    result = memory(root).rebuild_indexes()
    emit(as_json, result, f"rebuilt INDEX.md for {result['categories']} categories, {result['entries']} entries")
