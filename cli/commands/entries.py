"""Commands on single entries: init, write, read, update, list, delete, restore."""
from __future__ import annotations

from typing import Annotated, List, Optional

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit, memory, read_body, table, visible

TagOpt = Annotated[Optional[List[str]], typer.Option("--tag", "-t", help="A tag (repeat for several; 'a,b' works too).")]


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.command("write")(write)
    app.command("read")(read)
    app.command("update")(update)
    app.command("list")(list_entries)
    app.command("delete")(delete)
    app.command("restore")(restore)


def init(
    root: RootOpt = None, as_json: JsonOpt = False,
    adopt: Annotated[bool, typer.Option("--adopt", help="Make the Markdown notes already in the folder "
                                                       "memories: each gets a `mem-id:` line, nothing else changes; "
                                                       "the engine's files go into .memstrata/; aging never "
                                                       "compresses or moves them (docs/vault.md).")]
    = False,
    indexes: Annotated[bool, typer.Option("--indexes", help="With --adopt: also keep an INDEX.md in each "
                                                           "folder of the vault.")] = False,
    clone: Annotated[Optional[str], typer.Option("--clone", help="Make the tree from this git remote "
                                                               "(docs/team.md).")] = None,
    machine: Annotated[Optional[str], typer.Option("--machine", help="With --clone: this machine's name in "
                                                                     "commits and histories.")] = None,
    index_from: Annotated[Optional[str], typer.Option("--index-from", help="With --clone: pull this index "
                                                                           "snapshot instead of embedding "
                                                                           "everything.")] = None,
):
    """Create a memory tree (idempotent): root 0700, config.md, INDEX.md, .gitignore, starter categories.

    Every other command refuses a folder that `mem init` did not make. A folder that already
    holds notes (an Obsidian vault, a docs folder) is made a tree only with --adopt; --adopt on a
    folder that does not exist or holds no Markdown notes is refused and creates nothing.

    Examples: mem init --root ~/memory; mem init --adopt --root ~/notes;
    mem init --clone git@host:team/memory.git --root ~/memory
    """
    if clone is not None:
        from memstrata.cli.commands.team import clone as clone_tree

        return clone_tree(root, clone, machine, index_from, as_json)
    from memstrata.cli.output import progress

    import time

    started = time.monotonic()
    result = memory(root).init(adopt=adopt, progress=progress("adopting" if adopt else "embedding", as_json),
                               index_progress=progress("indexing", as_json), indexes=indexes)
    result["seconds"] = round(time.monotonic() - started, 2)
    adopted = (f"; {counted(result['entries'], 'note')} adopted ({result['adopted']} given an id)"
               if result.get("entries") else "")
    if "error" in result.get("index", {}):
        typer.echo(f"warning: the adopted notes are not indexed yet ({result['index']['error']}); run `mem sync`",
                   err=True)
    for note in result.get("skipped", []):
        typer.echo(f"warning: {note}", err=True)
    for path, why in sorted(result.get("index", {}).get("flagged", {}).items()):  # a note holding a credential
        typer.echo(f"warning: {path}: {why}", err=True)
    emit(as_json, result, f"memory tree ready at {result['root']}"
         + (f" (created: {', '.join(result['created'])}{adopted})" if result["created"] else " (already there)"))


def write(
    body: Annotated[Optional[str], typer.Argument(help="The memory text; '-' reads stdin.")] = None,
    title: Annotated[Optional[str], typer.Option("--title", help="Title (default: the first line of the body).")] = None,
    category: Annotated[Optional[str], typer.Option("--category", "-c", help="Category path, e.g. projects/web.")] = None,
    tag: TagOpt = None,
    importance: Annotated[Optional[str], typer.Option("--importance", "-i",
                          help="0-1, or low/medium/high/important.")] = None,
    important: Annotated[bool, typer.Option("--important", help="Never compress, archive or forget it.")] = False,
    related: Annotated[Optional[List[str]], typer.Option("--related", help="Id of a related entry (repeatable).")] = None,
    expires: Annotated[Optional[str], typer.Option("--expires", help="ISO date after which it expires.")] = None,
    file: Annotated[Optional[str], typer.Option("--file", "-f", help="Read the body from this file.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Write a new entry even if a near-duplicate or an entry "
                                                        "on the same subject exists.")] = False,
    merge: Annotated[bool, typer.Option("--merge", help="Fold the text into the near-duplicate or same-subject "
                                                        "entry (its text, then this one).")] = False,
    share: Annotated[bool, typer.Option("--share", help="Also put it in the shared space other agents read.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Write a new memory.

    Examples:

    \b
      mem write "We chose Postgres" --title "DB choice" --category projects/alpha --tag db
      echo "notes" | mem write - --title "Standup 2026-07-18" --category meetings

    In its category, a title names one subject: a write with the title of an entry there (case,
    spacing and punctuation aside) becomes that entry's next version, the old text kept (`mem
    history`); so does one with its tags and a similar text, and one under another title that says
    it left a value the nearest entry states ("moved from Dracula to ..."). The answer says so
    ("conflict detected ..., both versions kept, current is v2"). `--force` writes a separate entry.
    """
    from memstrata.errors import InvalidInput

    text = read_body(body, file)
    if not text.strip():  # a title alone is no memory: nothing a recall could ever find in it
        raise InvalidInput("the text to remember is empty; give it as an argument, '-' for stdin, or --file F")
    result = memory(root).write(text, title=title, category=category, tags=tag, importance=importance,
                                important=important, related=related, expires=expires, force=force, merge=merge,
                                **({"share": True} if share else {}))
    emit(as_json, result.to_dict(), lambda: _print_write(result))


def _print_write(result) -> None:
    for warning in result.warnings:
        typer.echo(f"warning: {warning}", err=True)
    typer.echo(f"{result.message or result.action} [{result.id}]")
    if result.action == "conflict" and result.previous_version:  # what the user may want next
        old = result.previous_version
        typer.echo(f"  v{old} is kept: mem history {result.id} --show {old}; "
                   f"if v{old} is still right: mem revert {result.id} --to {old}")
        if getattr(result, "rule", None) not in (None, "title", "alias"):  # merged under another title
            typer.echo("  another subject: revert, then write it again with --force (a separate entry under its "
                       "own title)")
    shared = getattr(result, "shared", None)  # a SharedWriteResult: what happened in the shared root
    if shared:
        typer.echo(f"shared as {shared.get('path')} in {shared.get('root')} "
                   f"({shared.get('action')}, by {shared.get('agent')})")


def read(
    ref: Annotated[str, typer.Argument(help="Entry id, or a path relative to the root.")],
    no_touch: Annotated[bool, typer.Option("--no-touch", help="Do not count this read as an access.")] = False,
    turn: Annotated[Optional[int], typer.Option("--turn", help="A captured session: show this turn (1-based; "
                                                "a recall hit's `turn`).", min=1)] = None,
    around: Annotated[int, typer.Option("--around", help="With --turn: also this many turns either side.",
                                        min=0)] = 0,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Print an entry (counts as an access unless --no-touch); of a captured session, with --turn, the
    turns around one.

    Example: mem read 3f2a9c1b7d4e --json; mem read 3f2a9c1b7d4e --turn 12 --around 2
    """
    from memstrata.storage.codec import render

    from memstrata.results import entry_full

    if turn is not None:
        view = memory(root).read_turns(ref, turn, around=around, count_access=not no_touch)
        emit(as_json, view.to_dict(), lambda: typer.echo(view.render(), nl=False))
        return
    if around:
        from memstrata.errors import InvalidInput

        raise InvalidInput("--around goes with --turn N")
    entry = memory(root).read(ref, count_access=not no_touch)
    def human():
        # the title as people can see it (an RLO or a zero-width space written as its escape); the body as stored
        text = render(entry.copy(title=visible(entry.title)))  # a body kept byte for byte may lack its last newline
        typer.echo(text, nl=not text.endswith("\n"))

    emit(as_json, entry_full(entry), human)


def update(
    ref: Annotated[str, typer.Argument(help="Entry id or path.")],
    body: Annotated[Optional[str], typer.Argument(help="New body; '-' reads stdin; omit to keep it.")] = None,
    title: Annotated[Optional[str], typer.Option("--title", help="New title.")] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", "-t", help="Add a tag (repeatable; 'a, b' works).")]
    = None,
    untag: Annotated[Optional[list[str]], typer.Option("--untag", help="Remove a tag (repeatable).")] = None,
    tags: Annotated[Optional[str], typer.Option("--tags", help="Set the tags, replacing all: 'a, b' ('' clears).")]
    = None,
    importance: Annotated[Optional[str], typer.Option("--importance", "-i",
                          help="0-1, or low/medium/high/important.")] = None,
    category: Annotated[Optional[str], typer.Option("--category", "-c", help="Move to this category.")] = None,
    expires: Annotated[Optional[str], typer.Option("--expires", help="ISO date after which it expires.")] = None,
    file: Annotated[Optional[str], typer.Option("--file", "-f", help="Read the new body from this file.")] = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Change an entry in place (same id); the old body is kept as a version.

    Tags: --tag adds, --untag removes, --tags sets them all. An id may be shortened to a unique
    prefix (at least 4 characters), as in git.

    Example: mem update 3f2a9c1b7d4e "We moved to MySQL" --tag db --untag postgres
    """
    text = read_body(body, file, allow_empty=True)
    result = memory(root).update(ref, text, title=title, tags=tags, add_tags=tag, remove_tags=untag,
                                 importance=importance, category=category, expires=expires)
    emit(as_json, result.to_dict(), lambda: _print_write(result))


def list_entries(
    category: Annotated[Optional[str], typer.Option("--category", "-c", help="Category (its whole subtree).")] = None,
    tier: Annotated[Optional[str], typer.Option("--tier", help="hot, warm, cold or archive.")] = None,
    status: Annotated[Optional[str], typer.Option("--status", help="active, archived or expired.")] = None,
    tag: TagOpt = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """List entries, filtered by category subtree, tier, status and tags.

    Example: mem list --category projects --tier hot --json
    """
    from memstrata.results import entry_summary
    from memstrata.storage.paths import shown_category
    from memstrata.storage.secrets import redact

    _check_choice("tier", tier, ("hot", "warm", "cold", "archive"))
    _check_choice("status", status, ("active", "archived", "expired"))
    m = memory(root)
    entries = m.list(category=category, tier=tier, status=status, tags=tag)
    hidden = m.unreadable(category)  # never a quiet gap: what cannot be read is named (recall still greps it)
    if hidden:
        first = next(iter(hidden))
        typer.echo(f"mem: warning: {counted(len(hidden), 'file')} not listed, unreadable: {first} ({hidden[first]})"
                   + (f" and {len(hidden) - 1} more" if len(hidden) > 1 else "") + "; `mem doctor` reports them", err=True)
    # a listing redacts as recall does (a flagged note's title and tags showed its token); `mem read` shows the file
    rows = [{**r, "title": redact(r["title"]), "tags": [redact(t) for t in r["tags"]]}
            for r in map(entry_summary, entries)]
    emit(as_json, {"count": len(rows), "entries": rows, **({"unreadable": hidden} if hidden else {})},
         lambda: table([{**r, "category": shown_category(r["category"])} for r in rows],  # a vault's top: "/"
                       ["id", "title", "category", "status", "tier", "updated"]))


def _check_choice(name: str, value, allowed) -> None:
    from memstrata.errors import InvalidInput

    if value is not None and value not in allowed:
        raise InvalidInput(f"--{name} must be one of {', '.join(allowed)}, not {value!r}")


def delete(
    ref: Annotated[str, typer.Argument(help="Entry id or path.")],
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Move an entry to the trash (restorable with `mem restore ID`).

    Example: mem delete 3f2a9c1b7d4e
    """
    item = memory(root).delete(ref)
    emit(as_json, item.to_dict(), f"moved {item.trashed_from} to the trash [{item.id}]")


def restore(
    entry_id: Annotated[str, typer.Argument(help="Id of an entry in the trash, or its trash path (.trash/NAME.md) "
                                                 "for an entry without a valid id.")],
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Bring an entry back from the trash to where it was.

    Example: mem restore 3f2a9c1b7d4e   (or: mem restore .trash/--stale-note.md)
    """
    from memstrata.results import entry_summary

    entry = memory(root).restore(entry_id)
    emit(as_json, entry_summary(entry), f"restored {entry.path} [{entry.id}]")
