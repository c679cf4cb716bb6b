"""`mem doctor [--fix] [--json]`: check the tree for damage and repair what can be repaired."""
from __future__ import annotations

import sys
from typing import Annotated

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit, memory

EXIT_PROBLEMS = 9  # problems remain (after --fix: the ones it could not repair)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def doctor(
    fix: Annotated[bool, typer.Option("--fix", help="Repair what can be repaired (nothing is deleted: "
                                      "unreadable files go to .quarantine/).")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Check the tree, the catalog, the INDEX.md files and the vector index against each other.

    Finds entries that fail to parse, duplicate ids, leftover temp files, orphan sidecars and
    versions, symlinks leading outside the root, a held lock, a model mismatch and loose
    permissions. Exit code 0 when healthy (or everything was fixed), 9 when problems remain.

    Examples:

    \b
      mem doctor
      mem doctor --fix --json
    """
    from memstrata.doctor import report_lines

    report = memory(root).doctor(fix=fix)

    def human():
        for line in report_lines(report):
            typer.echo(line)
        checked = report.checked.get("entries", 0)
        if report.healthy:
            fixed = sum(1 for f in report.findings if f.fixed)
            typer.echo(f"healthy: {counted(checked, 'entry', 'entries')} checked" + (f", {counted(fixed, 'problem')} fixed" if fixed else ""))
        else:
            hints = [] if fix or not any(p.fixable for p in report.problems) else ["run `mem doctor --fix`"]
            if any(p.kind == "secret" for p in report.problems):  # only the user can say a value is no secret
                hints.append("a flagged value that is no secret: `mem secrets allow PATH`")
            hint = f" ({'; '.join(hints)})" if hints else ""
            sys.stdout.flush()  # the findings first: stdout and stderr often share one file (2>&1)
            typer.echo(f"{counted(len(report.problems), 'problem')} remain{'s' if len(report.problems) == 1 else ''} in "
                       f"{counted(checked, 'entry', 'entries')}{hint}", err=True)

    emit(as_json, report.to_dict(), human)
    if not report.healthy:
        # SystemExit, not typer.Exit: main() runs the app with standalone_mode=False, where a
        # typer.Exit code is returned by click and dropped; SystemExit reaches the process (and
        # the service forwards it).
        raise SystemExit(EXIT_PROBLEMS)
