"""Each call runs as its caller: through a warm service started with other values, an index push
goes to the caller's object store and a team sync commits as the caller's git identity; a forwarded
call sees the caller's whole environment and nothing of the service's. Real processes, real git, moto."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).parent))
from service_helpers import status  # noqa: E402

moto_server = pytest.importorskip("moto.server")

PY = sys.executable
RUN = tempfile.mkdtemp(prefix="memstrata-env-run-")
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def mem(root, *args, service="auto", timeout=240, **extra):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST" and not k.startswith(("AWS_", "GIT_"))}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": service, "HF_HUB_OFFLINE": "1",
                "MEMSTRATA_RUNTIME_DIR": RUN, **{k: str(v) for k, v in extra.items()}})
    return subprocess.run([PY, "-m", "memstrata.cli.app", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def start_service(root, **env):
    """A warm service started by someone with other values in the environment."""
    mem(root, "serve", "--stop", service="off", timeout=120)
    p = mem(root, "serve", "--detach", "--json", service="off", **env)
    assert p.returncode == 0, p.stderr
    deadline = time.monotonic() + 180
    while not (status(RUN) or {}).get("warm") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (status(RUN) or {}).get("warm")


def s3_server():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="k",
                      aws_secret_access_key="s")
    s3.create_bucket(Bucket="team")
    return server, endpoint, s3


@pytest.fixture
def team_tree(tmp_path, embedder):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    m = Memory(tmp_path / "a", embedder=embedder)
    m.clone(str(tmp_path / "r.git"), machine="a")
    m.write("The deploy runs at 6 pm on Fridays.", title="Deploys", category="ops")
    m.sync_remote()
    return tmp_path / "a", tmp_path / "r.git"


def test_an_index_push_uses_the_callers_endpoint_and_keys(team_tree):
    root, _ = team_tree
    server, endpoint, s3 = s3_server()
    try:
        # the service's values point at a port where nothing listens: a push made with them fails
        start_service(root, AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_ACCESS_KEY_ID="service-key",
                      AWS_SECRET_ACCESS_KEY="service-secret", AWS_REGION="eu-west-1")
        p = mem(root, "index", "push", "s3://team/idx", "--json", AWS_ENDPOINT_URL=endpoint,
                AWS_ACCESS_KEY_ID="caller-key", AWS_SECRET_ACCESS_KEY="caller-secret", AWS_REGION="us-east-1")
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["entries"] == 1
        assert s3.list_objects_v2(Bucket="team", Prefix="idx/").get("KeyCount", 0) > 0
        # with no AWS variables in the service, the caller's region and S3 endpoint still apply
        start_service(root)
        again = mem(root, "index", "push", "s3://team/idx2", "--json", AWS_ENDPOINT_URL_S3=endpoint,
                    AWS_ACCESS_KEY_ID="caller-key", AWS_SECRET_ACCESS_KEY="caller-secret", AWS_REGION="us-east-1")
        assert again.returncode == 0, again.stderr
        assert s3.list_objects_v2(Bucket="team", Prefix="idx2/").get("KeyCount", 0) > 0
    finally:
        server.stop()


def test_a_team_sync_commits_as_the_callers_git_identity(team_tree):
    root, remote = team_tree
    start_service(root, GIT_AUTHOR_NAME="Mallory", GIT_AUTHOR_EMAIL="mallory@example.com",
                  GIT_COMMITTER_NAME="Mallory", GIT_COMMITTER_EMAIL="mallory@example.com")
    before = status(RUN)["requests"]
    w = mem(root, "write", "Alice moved the deploy to 5 pm.", "--title", "Deploy time", "--category", "ops",
            "--json", GIT_AUTHOR_NAME="Alice", GIT_AUTHOR_EMAIL="alice@example.com")
    assert w.returncode == 0, w.stderr
    assert status(RUN)["requests"] == before + 1  # the write went through the warm service
    s = mem(root, "sync", "--remote", "--json", GIT_AUTHOR_NAME="Alice", GIT_AUTHOR_EMAIL="alice@example.com",
            GIT_COMMITTER_NAME="Alice", GIT_COMMITTER_EMAIL="alice@example.com")
    assert s.returncode == 0, s.stderr
    author = subprocess.run(["git", "--git-dir", str(remote), "log", "-1", "--format=%an <%ae> / %cn"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert author == "Alice <alice@example.com> / Alice"


def test_a_forwarded_call_sees_the_callers_environment_only(tmp_path, embedder):
    root = tmp_path / "t"
    m = Memory(root, embedder=embedder)
    m.init()
    start_service(root, MEMSTRATA_NOW="2001-01-01T00:00:00Z")
    before = status(RUN)["requests"]
    mine = mem(root, "write", "Caller's clock.", "--title", "Mine", "--category", "notes", "--json",
               MEMSTRATA_NOW="2020-02-02T02:02:02Z")
    none = mem(root, "write", "No clock given.", "--title", "None", "--category", "notes", "--json")
    assert mine.returncode == 0 and none.returncode == 0, (mine.stderr, none.stderr)
    assert status(RUN)["requests"] == before + 2
    created = {}
    for p in (mine, none):
        entry = json.loads(mem(root, "read", json.loads(p.stdout)["id"], "--json", "--no-touch", service="off").stdout)
        created[entry["frontmatter"]["title"]] = entry["frontmatter"]["created"]
    assert created["Mine"].startswith("2020-02-02T02:02:02")
    assert not created["None"].startswith("2001")  # the service's own value never applies to a call
