"""Commands of team memory: sync with a git remote, clone, index snapshots (push/pull) and the MCP server over HTTP."""
from __future__ import annotations

import sys
import time
from typing import Annotated

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit, memory

index_app = typer.Typer(help="The index: INDEX.md regeneration (--rebuild), snapshots on object storage (push, pull).",
                        no_args_is_help=False, invoke_without_command=True)

UriArg = Annotated[str, typer.Argument(help="s3://bucket/path (AWS_* environment / ~/.aws for credentials and "
                                            "AWS_ENDPOINT_URL for S3-compatible servers), file:///path or a folder.")]


def sync_remote(root: str | None, flag: bool, name: str | None, watch: float | None, as_json: bool) -> None:
    """`mem sync --remote [NAME] [--watch SECONDS]`: once, or every SECONDS until interrupted."""
    from memstrata.errors import InvalidInput, MemstrataError

    if not flag:
        raise InvalidInput("a remote name and --watch go with --remote: mem sync --remote [NAME] [--watch SECONDS]")
    remote = name or "origin"
    m = memory(root)
    if watch is not None and watch <= 0:  # --watch 0: the tree's sync_interval setting
        watch = float(m.settings.sync_interval) or None
        if watch is None:
            raise InvalidInput("sync_interval is 0 (off): give --watch SECONDS or mem config set sync_interval 300")
    while True:
        try:
            result = m.sync_remote(remote)
        except MemstrataError as exc:
            if watch is None:
                raise
            sys.stderr.write(f"mem: error: {exc.message} (trying again in {watch:g}s)\n")
        else:
            emit(as_json, result, lambda: _say_synced(result))
        if watch is None:
            return
        sys.stdout.flush()
        time.sleep(watch)


def _say_synced(result: dict) -> None:
    committed = "; ".join(c["summary"] for c in result["committed"])
    committed = f"committed {committed}" if committed else "nothing to commit"
    typer.echo(f"synced with {result['remote']}/{result['branch']} as {result['machine']}: {committed}; "
               f"pulled {result['pulled']} files; {len(result['conflicts'])} resolved; "
               f"{'pushed' if result['pushed'] else 'nothing to push'}")
    if result.get("accesses_shared"):
        typer.echo(f"  shared {result['accesses_shared']} reads (.access/, for the other machines to count)")
    for item in result["conflicts"]:
        typer.echo(f"  {item['kind']}: {item['message']} [{item['path']}]")
    for item in result.get("ignored", []):
        typer.echo(f"  ignored: {item['path']} is a {item['kind']} (never followed; remove it from the repository)")
    for item in result.get("settings_held_back", []):
        kept = "" if item["setting"] == "config.md" else "; kept " + (
            "its default" if item["kept"] is None else str(item["kept"]))
        typer.echo(f"  setting {item['setting']} from the remote not applied: {item['why']}{kept}")
    for item in result.get("settings_pulled", []):
        before = "its default" if item["from"] is None else item["from"]
        after = "its default" if item["to"] is None else item["to"]
        typer.echo(f"  setting {item['setting']} changed by the remote: {before} -> {after}")
    for line in result.get("warnings", []):
        typer.echo(f"  warning: {line}")
    if result.get("index"):
        typer.echo(f"  index: {result['index']['embedded']} embedded, {result['index']['updated']} updated, "
                   f"{result['index']['removed']} removed")
        for path, why in sorted(result["index"].get("flagged", {}).items()):
            typer.echo(f"  warning: {path}: {why}", err=True)


def clone(root: str | None, url: str, machine: str | None, index_from: str | None, as_json: bool) -> None:
    """`mem init --clone URL`: a new machine's tree from the team's remote."""
    result = memory(root).clone(url, machine=machine, index_uri=index_from)
    emit(as_json, result, f"cloned {url} into {result['root']}; index: {result['index'].get('embedded', 0)} embedded"
                          + (f" after pulling {index_from}" if index_from else ""))


@index_app.callback()
def index(
    ctx: typer.Context,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Regenerate every INDEX.md from the files.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Regenerate the INDEX.md files (--rebuild), or push/pull an index snapshot.

    Examples: mem index --rebuild; mem index push s3://team-bucket/memory; mem index pull s3://team-bucket/memory
    """
    if ctx.invoked_subcommand is not None:
        return
    from memstrata.errors import InvalidInput

    if not rebuild and root is None and not as_json:  # a bare `mem index`: its help, as every bare group
        typer.echo(ctx.get_help())
        return
    if not rebuild:
        raise InvalidInput("give --rebuild (regenerate every INDEX.md) or a subcommand: push, pull")
    result = memory(root).rebuild_indexes()
    emit(as_json, result, f"rebuilt INDEX.md for {counted(result['categories'], 'category', 'categories')}, "
         f"{counted(result['entries'], 'entry', 'entries')}")


@index_app.command("push")
def push(uri: UriArg, root: RootOpt = None, as_json: JsonOpt = False):
    """Upload the vector index with the tree commit and model it matches (it is brought in step first).

    Example: AWS_ENDPOINT_URL=http://127.0.0.1:9000 mem index push s3://team/memory
    """
    result = memory(root).index_push(uri)
    emit(as_json, result, f"pushed {result['rows']} rows ({counted(result['entries'], 'entry', 'entries')}, {result['model']}) at "
                          f"commit {result['commit'][:12] or '(none)'} to {uri} in {result['seconds']}s")


@index_app.command("pull")
def pull(uri: UriArg, root: RootOpt = None, as_json: JsonOpt = False):
    """Download an index snapshot, then embed only the entries whose text differs from it.

    Example: mem index pull s3://team/memory
    """
    result = memory(root).index_pull(uri)
    emit(as_json, result, f"pulled {result['rows']} rows from {uri} (commit {str(result['commit'])[:12]}); "
                          f"{result['embedded']} embedded, {result['updated']} updated, {result['removed']} removed "
                          f"in {result['seconds']}s")


def mcp_http(root: str | None, host: str, port: int, warm: bool) -> None:
    """`mem mcp --http`: the MCP tools over streamable HTTP, behind a bearer token."""
    from memstrata.mcp.http import serve_http

    def announce(info: dict) -> None:
        sys.stderr.write(
            f"memstrata MCP over HTTP at {info['url']}\n"
            + (f"bearer token: {info['token']}\n" if info["token_printed"] else "bearer token: $MEMSTRATA_MCP_TOKEN\n"))
        sys.stderr.flush()

    serve_http(root, host=host, port=port, warm=warm, announce=announce)
