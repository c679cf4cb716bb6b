"""IndexSnapshots: `mem index push/pull URI` - the derived LanceDB table and the tree commit it matches, on object storage."""
from __future__ import annotations

import configparser
import json
import os
import time
from pathlib import Path
from urllib.parse import urlparse

from memstrata.engine.state import TreeState
from memstrata.errors import CorruptEntry, InvalidInput, NotFound
from memstrata.features.gitrepo import Git
from memstrata.features.recall import Recall
from memstrata.retrieval import trusted
from memstrata.retrieval.table import SCHEMA_VERSION, TABLE_NAME
from memstrata.storage.catalog import iter_entry_files, read_entry_file

SNAPSHOT_TABLE = "snapshot"  # one row: commit, model, dim, schema, rows, made_at, machine


def location(uri: str) -> tuple[str, dict | None]:
    """(what lancedb.connect takes, storage options): s3:// with credentials from the standard AWS
    environment and config files; file:// or a plain path as a local folder. Nothing is stored in the tree."""
    if not uri:
        raise InvalidInput("give a snapshot URI: s3://bucket/path, file:///path or a folder")
    parsed = urlparse(uri)
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise InvalidInput(f"{uri}: no bucket")
        return uri.rstrip("/"), aws_storage_options()
    if parsed.scheme == "file":
        return str(Path(parsed.path).resolve()), None
    if parsed.scheme and len(parsed.scheme) > 1:
        raise InvalidInput(f"{uri}: only s3://, file:// and plain paths are supported")
    return str(Path(os.path.expanduser(uri)).resolve()), None


def aws_storage_options(env=None) -> dict:
    """LanceDB's S3 options from AWS_* variables, else ~/.aws/credentials and ~/.aws/config ($AWS_PROFILE)."""
    env = os.environ if env is None else env
    profile = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    files = _aws_files(env, profile)
    opts = {}
    key = env.get("AWS_ACCESS_KEY_ID") or files.get("aws_access_key_id")
    secret = env.get("AWS_SECRET_ACCESS_KEY") or files.get("aws_secret_access_key")
    token = env.get("AWS_SESSION_TOKEN") or files.get("aws_session_token")
    if key and secret:
        opts.update(aws_access_key_id=key, aws_secret_access_key=secret)
        if token:
            opts["aws_session_token"] = token
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or files.get("region")
    if region:
        opts["aws_region"] = region
    endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT")
                or files.get("endpoint_url"))
    if endpoint:
        opts["aws_endpoint"] = endpoint
        if endpoint.startswith("http://"):
            opts["allow_http"] = "true"
    return opts


def _aws_files(env, profile: str) -> dict:
    out = {}
    home = Path(os.path.expanduser("~"))
    for path, section in ((env.get("AWS_CONFIG_FILE") or home / ".aws" / "config",
                           "default" if profile == "default" else f"profile {profile}"),
                          (env.get("AWS_SHARED_CREDENTIALS_FILE") or home / ".aws" / "credentials", profile)):
        parser = configparser.ConfigParser()
        try:
            parser.read(path)
        except (configparser.Error, OSError):
            continue
        if parser.has_section(section):
            out.update({k: v for k, v in parser.items(section) if v})
    return out


class IndexSnapshots:
    """Push the tree's vector table (and the commit it matches) to a URI; pull it into a fresh clone."""

    def __init__(self, state: TreeState, recall: Recall):
        self.state = state
        self.recall = recall
        self.root = state.root

    def _connect(self, uri: str):
        from memstrata.retrieval.lance_import import import_lancedb

        lancedb = import_lancedb()

        target, options = location(uri)
        if options is None:
            Path(target).mkdir(parents=True, exist_ok=True)
            return lancedb.connect(target)
        return lancedb.connect(target, storage_options=options)

    def push(self, uri: str) -> dict:
        """Bring the index in step with the tree, then upload it with the tree's commit and model."""
        started = time.monotonic()
        synced = self.recall.sync()
        git = Git(self.root)
        commit = git.head() if git.is_repo() else None
        dirty = bool(git.out("status", "--porcelain")) if commit else True
        with self.state.lock():
            index = self.state.vector_index()
            index.refresh()
            table = index.table()
            if table is None:
                raise NotFound("there is no index to push (mem sync builds it)")
            data = table.to_arrow()
            meta = index.meta()
        db = self._connect(uri)
        db.create_table(TABLE_NAME, data=data, mode="overwrite")
        row = {"commit": commit or "", "dirty": dirty, "model": meta.get("model", ""), "dim": int(meta.get("dim", 0)),
               "schema": int(meta.get("schema", SCHEMA_VERSION)), "rows": data.num_rows,
               "entries": len(set(data.column("id").to_pylist())), "made_at": time.time(),
               "machine": git.machine() if commit else ""}
        db.create_table(SNAPSHOT_TABLE, data=[{"meta": json.dumps(row)}], mode="overwrite")
        return {"uri": uri, **row, "synced": synced, "seconds": round(time.monotonic() - started, 2)}

    def info(self, uri: str) -> dict:
        db = self._connect(uri)
        try:
            rows = db.open_table(SNAPSHOT_TABLE).to_arrow().column("meta").to_pylist()
        except (FileNotFoundError, ValueError) as exc:
            raise NotFound(f"no index snapshot at {uri}") from exc
        if not rows:
            raise NotFound(f"no index snapshot at {uri}")
        try:
            info = json.loads(rows[0])
        except (TypeError, ValueError):
            info = None
        if not isinstance(info, dict):
            raise InvalidInput(f"the index snapshot at {uri} has no readable metadata (not a JSON object)")
        for key in ("dim", "schema", "rows"):
            if key in info and (isinstance(info[key], bool) or not isinstance(info[key], int)):
                raise InvalidInput(f"the index snapshot at {uri} has a {key} that is not a number")
        if not isinstance(info.get("commit", ""), str) or not isinstance(info.get("model", ""), str):
            raise InvalidInput(f"the index snapshot at {uri} has a commit or model that is not a text")
        return info

    def _entries(self) -> list:
        """Every readable entry file of the tree (an unreadable one is the sync's to report)."""
        out = []
        for rel, _ in iter_entry_files(self.root):
            try:
                out.append(read_entry_file(self.root, rel))
            except (CorruptEntry, OSError):
                continue
        return out

    def pull(self, uri: str) -> dict:
        """Download a snapshot as this tree's index, then embed only what differs from it.

        The files changed since the snapshot's commit (git diff) are the ones whose text may
        differ; `Recall.sync` checks every file by content hash, so only those are embedded.
        """
        started = time.monotonic()
        info = self.info(uri)
        embedder = self.state.model()
        if info.get("model") != embedder.name or int(info.get("dim", 0)) != embedder.dim:
            raise InvalidInput(f"the snapshot was made with {info.get('model')} ({info.get('dim')} dims); this tree "
                               f"uses {embedder.name}: run mem sync to embed with it instead")
        if int(info.get("schema", 0)) != SCHEMA_VERSION:
            raise InvalidInput(f"the snapshot's table schema is v{info.get('schema')}; this build reads "
                               f"v{SCHEMA_VERSION}")
        try:
            raw = self._connect(uri).open_table(TABLE_NAME).to_arrow()
        except (FileNotFoundError, ValueError, OSError) as exc:
            raise NotFound(f"the index snapshot at {uri} has no chunk table ({type(exc).__name__})") from None
        data = trusted.check_table(raw, embedder.dim)  # before anything here is replaced
        downloaded = time.monotonic() - started
        with self.state.lock():
            index = self.state.vector_index()
            data, dropped, gone = trusted.rows_matching_files(index, data, embedder, self._entries())
            index.adopt(data, embedder)
            self.state.index_in_step = None
        git = Git(self.root)
        changed = None
        if info.get("commit") and git.is_repo() and git.ref_exists(info["commit"]):
            changed = sorted({p for _, p in git.changed(info["commit"], "HEAD")}
                             | {line[3:] for line in git.out("status", "--porcelain").splitlines()})
        synced = self.recall.sync()
        return {"uri": uri, "commit": info.get("commit"), "model": info.get("model"), "rows": data.num_rows,
                "rows_not_matching_files": len(dropped),
                "changed_since_snapshot": None if changed is None else len(changed),
                "embedded": synced.get("embedded", 0), "updated": synced.get("updated", 0),
                "removed": synced.get("removed", 0) + len(gone), "download_seconds": round(downloaded, 2),
                "seconds": round(time.monotonic() - started, 2)}
