"""`mem secrets allow|list|revoke`: say a flagged value of one note is no secret, list, take back."""
from __future__ import annotations

from typing import Annotated

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit, memory, table

secrets_app = typer.Typer(help="Values the credential scan flagged that you say are no secret, note by note.",
                          no_args_is_help=True)
PathArg = Annotated[str, typer.Argument(help="The note: a path relative to the root, or its id.")]


def register(app: typer.Typer) -> None:
    app.add_typer(secrets_app, name="secrets")


@secrets_app.command("allow")
def secrets_allow(path: PathArg, root: RootOpt = None, as_json: JsonOpt = False):
    """Allow the values flagged in this note as it is now (a fingerprint of each is kept, never the
    value) and index it; a credential added to it later is flagged again.

    Example: mem secrets allow github-actions/postgresq-service-container.md
    """
    data = memory(root).secrets_allow(path)
    emit(as_json, data, f"allowed {counted(len(data['allowed']), 'flagged value')} in {data['path']}"
                        + ("; indexed" if data["indexed"] else "; not indexed (see `mem doctor`)"))


@secrets_app.command("list")
def secrets_list(root: RootOpt = None, as_json: JsonOpt = False):
    """The notes with allowed values: kind and place of each (no value, no fingerprint); here False: made
    on another machine (a pulled file), it allows nothing here.

    Example: mem secrets list --json
    """
    data = memory(root).secrets_allowed()
    rows = [{"path": rel, **r} for rel, records in data["notes"].items() for r in records]
    emit(as_json, data, lambda: table(rows, ["path", "kind", "field", "line", "column", "allowed_at", "here"]))


@secrets_app.command("revoke")
def secrets_revoke(path: PathArg, root: RootOpt = None, as_json: JsonOpt = False):
    """Take back what was allowed for this note: the next sync flags it again (and drops it from the index).

    Example: mem secrets revoke github-actions/postgresq-service-container.md
    """
    data = memory(root).secrets_revoke(path)
    emit(as_json, data, f"revoked {counted(data['revoked'], 'allowed value')} of {data['path']}"
                        + ("; flagged again and out of the index" if data["unindexed"] else ""))
