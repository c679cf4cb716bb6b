"""`mem config get|set|unset|list`: the settings in config.md."""
from __future__ import annotations

from typing import Annotated

import typer
from memstrata.cli.output import JsonOpt, RootOpt, emit, memory, table

config_app = typer.Typer(help="Settings kept in config.md (thresholds, retention, model).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")


@config_app.command("list")
def config_list(root: RootOpt = None, as_json: JsonOpt = False):
    """Show every setting with its value.  Example: mem config list"""
    values = memory(root).config_list()
    emit(as_json, values, lambda: table([{"key": k, "value": v} for k, v in values.items()], ["key", "value"]))


@config_app.command("get")
def config_get(key: Annotated[str, typer.Argument(help="Setting name.")], root: RootOpt = None,
               as_json: JsonOpt = False):
    """Print one setting.  Example: mem config get trash_retention_days"""
    value = memory(root).config_get(key)
    emit(as_json, {key: value}, str(value))


# A value may start with a minus (`hot_days -5`): it reaches the setting's own range check
# instead of being taken for an unknown option.
@config_app.command("set", context_settings={"ignore_unknown_options": True})
def config_set(key: Annotated[str, typer.Argument(help="Setting name.")],
               value: Annotated[str, typer.Argument(help="New value.")],
               root: RootOpt = None, as_json: JsonOpt = False):
    """Change one setting in config.md.  Example: mem config set trash_retention_days 60"""
    result = memory(root).config_set(key, value)
    emit(as_json, result, f"{key} = {result[key]}")


@config_app.command("unset")
def config_unset(key: Annotated[str, typer.Argument(help="Setting name.")], root: RootOpt = None,
                 as_json: JsonOpt = False):
    """Forget a changed setting: it takes its documented default again.  Example: mem config unset hot_days"""
    result = memory(root).config_unset(key)
    emit(as_json, result, f"{key} = {result[key]} (default)")
