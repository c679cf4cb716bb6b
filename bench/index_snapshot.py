"""A 10k-entry tree: pull an index snapshot from S3 (moto on loopback) into a fresh clone vs embedding everything."""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MEMSTRATA_SERVICE", "off")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

WORDS = ("deploy cache queue index shard replica backup token quota schema region cluster latency budget "
         "release hotfix rollback canary metric alert dashboard runbook incident owner").split()


def main(n: int = 10000, changed: int = 100) -> dict:
    from moto.server import ThreadedMotoServer

    from memstrata import Memory
    from memstrata.models.embedder import get_embedder

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1",
                      AWS_ENDPOINT_URL=f"http://{host}:{port}")
    import boto3

    boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"]).create_bucket(Bucket="bench")
    uri = "s3://bench/index"
    embedder = get_embedder("bundled")
    out = {"entries": n, "changed_after_snapshot": changed}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run(["git", "init", "-q", "--bare", str(tmp / "r.git")], check=True)
        a = Memory(tmp / "a", embedder=embedder)
        a.clone(str(tmp / "r.git"), machine="a")
        lines = tmp / "entries.jsonl"
        with lines.open("w") as f:
            for i in range(n):
                w = [WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7, 11)]
                f.write(json.dumps({"id": f"e{i:06d}", "title": f"{w[0]} note {i}", "category": f"cat{i % 40}",
                                    "body": f"The {w[1]} of service {i} uses {w[2]} {i % 97} with {w[3]} set to "
                                            f"{i * 7 % 1000}."}) + "\n")
        t = time.monotonic()
        a.import_jsonl(lines)
        out["import_and_embed_s"] = round(time.monotonic() - t, 1)
        t = time.monotonic()
        a.sync_remote()
        out["first_sync_s"] = round(time.monotonic() - t, 1)
        pushed = a.index_push(uri)
        out["push_s"] = pushed["seconds"]
        for i in range(changed // 2):
            a.update(f"e{i:06d}", f"Service {i} was moved to the new cluster {i}.")
            a.write(f"A new fact {i} about runbook {i * 13}.", title=f"new fact {i}", category="new", force=True)
        a.sync_remote()
        t = time.monotonic()
        b = Memory(tmp / "b", embedder=embedder)
        pulled = b.clone(str(tmp / "r.git"), machine="b", index_uri=uri)["index"]
        out["clone_with_snapshot_s"] = round(time.monotonic() - t, 1)
        out["pull"] = {k: pulled[k] for k in ("rows", "embedded", "updated", "removed", "download_seconds",
                                              "seconds")}
        t = time.monotonic()
        c = Memory(tmp / "c", embedder=embedder)
        full = c.clone(str(tmp / "r.git"), machine="c")["index"]
        out["clone_full_embed_s"] = round(time.monotonic() - t, 1)
        out["full_embedded"] = full["embedded"]
    server.stop()
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("entries", nargs="?", type=int, default=10000, help="entries in the tree (default 10000)")
    ap.add_argument("--changed", type=int, default=100, help="entries changed or added after the snapshot")
    args = ap.parse_args()
    main(args.entries, changed=args.changed)
