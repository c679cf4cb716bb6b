"""Index snapshots on a real S3-compatible server (moto on loopback): push from one clone, pull into a fresh one."""
import subprocess

import pytest

moto_server = pytest.importorskip("moto.server")


@pytest.fixture
def s3(monkeypatch):
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}.items():
        monkeypatch.setenv(key, value)
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="team")
    yield "s3://team/memory-index"
    server.stop()


def test_pull_embeds_only_what_changed_since_the_snapshot(tmp_path, embedder, s3, monkeypatch):
    from memstrata import Memory

    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    a = Memory(tmp_path / "a", embedder=embedder)
    a.clone(str(tmp_path / "r.git"), machine="a")
    ids = [a.write(f"Service {n} listens on port {7000 + n} and logs to /var/log/s{n}.", title=f"Service {n}",
                   category="ops").id for n in range(12)]
    a.sync_remote()
    pushed = a.index_push(s3)
    assert pushed["entries"] == 12 and pushed["commit"] == a._team.git.head() and pushed["model"] == embedder.name
    a.update(ids[0], "Service 0 moved to port 9000.")       # changed after the snapshot
    a.write("The cache is flushed hourly.", title="Cache", category="ops")
    a.delete(ids[1])
    a.sync_remote()

    b = Memory(tmp_path / "b", embedder=embedder)
    cloned = b.clone(str(tmp_path / "r.git"), machine="b", index_uri=s3)
    pulled = cloned["index"]
    assert pulled["rows"] >= 12 and pulled["commit"] == pushed["commit"]
    assert pulled["embedded"] == 2          # the updated entry and the new one; 10 vectors came from the snapshot
    assert pulled["removed"] == 1
    assert b.recall("where does service 0 listen now?", k=1).to_dict()["results"][0]["id"] == ids[0]
    assert b.doctor().findings == []
    again = b.sync()
    assert again["embedded"] == 0 and again["updated"] == 0


def test_snapshot_uris_and_credentials(tmp_path, monkeypatch):
    from memstrata.errors import InvalidInput
    from memstrata.features.snapshots import aws_storage_options, location

    assert location(f"file://{tmp_path}/snap") == (str(tmp_path / "snap"), None)
    assert location(str(tmp_path / "x"))[1] is None
    with pytest.raises(InvalidInput):
        location("gs://bucket/x")
    opts = aws_storage_options({"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "eu-west-1",
                                "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000", "HOME": str(tmp_path)})
    assert opts == {"aws_access_key_id": "k", "aws_secret_access_key": "s", "aws_region": "eu-west-1",
                    "aws_endpoint": "http://127.0.0.1:9000", "allow_http": "true"}
    (tmp_path / "aws").mkdir()
    (tmp_path / "aws" / "credentials").write_text("[team]\naws_access_key_id = pk\naws_secret_access_key = ps\n")
    opts = aws_storage_options({"AWS_PROFILE": "team", "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws" / "credentials"),
                                "AWS_CONFIG_FILE": str(tmp_path / "aws" / "none")})
    assert opts["aws_access_key_id"] == "pk" and "aws_endpoint" not in opts
