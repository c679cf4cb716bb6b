"""`mem stats`: the tree as a whole (and where `mem index` is registered; its commands are in team.py)."""
from __future__ import annotations

import typer
from memstrata.cli.output import JsonOpt, RootOpt, bar, counted, emit, memory, table


def register(app: typer.Typer) -> None:
    app.command("stats")(stats)
    from memstrata.cli.commands.team import index_app

    app.add_typer(index_app, name="index")  # `index --rebuild` (below), `index push|pull URI` (team.py)


def stats(root: RootOpt = None, as_json: JsonOpt = False):
    """Counts per category, tier and status, and the retrieval strategy advised per category.

    Example: mem stats --json
    """
    from memstrata.storage.paths import shown_category

    data = memory(root).stats()

    def human():
        typer.echo(f"{counted(data['entries'], 'entry', 'entries')} in {data['root']}  (trash: {data['trash']})\n")
        tiers = data["tiers"]
        most = max(tiers.values(), default=0)
        table([{"tier": t, "count": tiers.get(t, 0), "bar": bar(tiers.get(t, 0), most)}
               for t in ("hot", "warm", "cold", "archive") if t in tiers], ["tier", "count", "bar"])
        largest = max((r["entries"] for r in data["categories"].values()), default=0)
        rows = [{"category": shown_category(c), **r, "bar": bar(r["entries"], largest, width=12)}  # a vault's top: /
                for c, r in data["categories"].items()]
        typer.echo("")
        table(rows, ["category", "entries", "bar", "archived", "strategy"])
        recent = data.get("recent", {})
        if any(recent.values()):
            typer.echo("\nlast 30 days: " + ", ".join(f"{n} {what}" for what, n in recent.items() if n))
        for warning in data.get("warnings", []):
            typer.echo(f"warning: {warning}", err=True)
        for path in data["unreadable"]:
            typer.echo(f"warning: cannot parse {path} (see mem doctor)", err=True)

    emit(as_json, data, human)

