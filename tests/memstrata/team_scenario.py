"""A team of three clones of one bare git repository, written by the CLI, the API and MCP at random (test and bench)."""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

MARKERS = re.compile(r"^(<{7}|={7}|>{7})( |$)", re.MULTILINE)


def two_clones(tmp_path: Path, embedder, machine_a: str = "A", machine_b: str = "B"):
    """Two trees cloned from one bare remote (tmp_path/r.git), as two machines of a team."""
    from memstrata import Memory

    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    a, b = Memory(tmp_path / "a", embedder=embedder), Memory(tmp_path / "b", embedder=embedder)
    a.clone(str(tmp_path / "r.git"), machine=machine_a)
    b.clone(str(tmp_path / "r.git"), machine=machine_b)
    return a, b


def plain_git_peer(tmp_path: Path) -> tuple[Path, list[str]]:
    """A peer of that remote using plain git (a hostile one, in the tests): its clone and its git command."""
    peer = tmp_path / "peer"
    subprocess.run(["git", "clone", "-q", str(tmp_path / "r.git"), str(peer)], check=True)
    return peer, ["git", "-C", str(peer), "-c", "user.name=p", "-c", "user.email=p@x"]


def env(**extra) -> dict:
    out = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "XDG_STATE_HOME")
           if key in os.environ}
    out.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                "MEMSTRATA_SERVICE": "off", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    out.update(extra)
    return out


def mem(*args, machine: str) -> dict:
    """Run the real `mem` command in a process; its --json answer."""
    done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args, "--json"], capture_output=True,
                          text=True, env=env(MEMSTRATA_MACHINE=machine), timeout=300)
    assert done.returncode == 0, (args, done.stderr)
    return json.loads(done.stdout)


class Team:
    """Clones A (written through the CLI), B (the Python API) and C (an MCP server process)."""

    def __init__(self, base: Path, embedder, seed: int):
        from memstrata import Memory

        self.base = Path(base)
        self.rng = random.Random(seed)
        self.remote = self.base / "team.git"
        subprocess.run(["git", "init", "-q", "--bare", str(self.remote)], check=True)
        self.roots = {name: self.base / name for name in "ABC"}
        mem("init", "--clone", str(self.remote), "--machine", "A", "--root", str(self.roots["A"]), machine="A")
        self.api = Memory(self.roots["B"], embedder=embedder)
        self.api.clone(str(self.remote), machine="B")
        Memory(self.roots["C"], embedder=embedder).clone(str(self.remote), machine="C")
        self.acked: list[tuple[str, str]] = []   # (id, body) of every acknowledged write or update
        self.deleted: set[str] = set()
        self.known: dict[str, set[str]] = {n: set() for n in "ABC"}  # ids each clone has seen
        self.counts = {"writes": 0, "updates": 0, "deletes": 0, "syncs": 0, "conflicts": 0}
        self.session = None
        self.n = 0

    def mcp_params(self) -> StdioServerParameters:
        return StdioServerParameters(command=sys.executable, args=["-m", "memstrata.cli.app", "mcp", "--root",
                                                                   str(self.roots["C"])], env=env())

    async def call(self, tool: str, arguments: dict) -> dict:
        result = await self.session.call_tool(tool, arguments)
        assert not result.is_error, result.content[0].text
        data = result.structured_content
        return data if data is not None else json.loads(result.content[0].text)

    # -- operations -------------------------------------------------------------------
    async def write(self, who: str) -> None:
        self.n += 1
        body = f"Fact {self.n} written on {who}: the code word is {self.rng.randrange(10**6)}."
        title = f"Fact {self.n} {who}"
        if who == "A":
            r = mem("write", body, "--title", title, "--category", "team", "--root", str(self.roots["A"]), machine="A")
        elif who == "B":
            r = self.api.write(body, title=title, category="team").to_dict()
        else:
            r = await self.call("write", {"body": body, "title": title, "category": "team"})
        assert r["action"] == "created", r
        self.acked.append((r["id"], body))
        self.known[who].add(r["id"])
        self.counts["writes"] += 1

    async def update(self, who: str, target: str) -> None:
        self.n += 1
        body = f"Fact revised {self.n} on {who}: the code word is now {self.rng.randrange(10**6)}."
        if who == "A":
            r = mem("update", target, body, "--root", str(self.roots["A"]), machine="A")
        elif who == "B":
            r = self.api.update(target, body)
            r = r.to_dict() if hasattr(r, "to_dict") else {"id": target}
        else:
            r = await self.call("update", {"ref": target, "body": body})
        self.acked.append((target, body))
        self.counts["updates"] += 1

    async def delete(self, who: str, target: str) -> None:
        if who == "A":
            mem("delete", target, "--root", str(self.roots["A"]), machine="A")
        elif who == "B":
            self.api.delete(target)
        else:
            await self.call("delete", {"ref": target})
        self.deleted.add(target)
        self.known[who].discard(target)
        self.counts["deletes"] += 1

    async def sync(self, who: str) -> None:
        if who == "B":
            r = self.api.sync_remote()
        else:
            r = mem("sync", "--remote", "--root", str(self.roots[who]), machine=who)
        self.counts["syncs"] += 1
        self.counts["conflicts"] += sum(1 for c in r["conflicts"] if c["kind"] == "conflict")
        self.known[who] = set(self.ids(who))

    def ids(self, who: str) -> list[str]:
        from memstrata.storage.codec import parse

        out = []
        for path in (self.roots[who] / "team").glob("*.md"):
            if path.name != "INDEX.md":
                out.append(parse(path.read_text(encoding="utf-8")).id)
        return out

    async def step(self) -> None:
        who = self.rng.choice("ABC")
        on_disk = set(self.ids(who)) if (self.roots[who] / "team").exists() else set()
        live = sorted(i for i in self.known[who] if i in on_disk)
        roll = self.rng.random()
        if roll < 0.3 or not live:
            await self.write(who)
        elif roll < 0.6:
            await self.update(who, self.rng.choice(live[:3]))  # a few hot entries: clones collide on them
        elif roll < 0.68:
            await self.delete(who, self.rng.choice(live))
        else:
            await self.sync(who)

    async def run(self, steps: int) -> None:
        from memstrata.mcp.server import log  # noqa: F401 - the server module imports cleanly

        with open(os.devnull, "w") as devnull:
            async with stdio_client(self.mcp_params(), errlog=devnull) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    self.session = session
                    for _ in range(steps):
                        await self.step()
                    for who in "ABCAB":  # final syncs everywhere (the last two bring A and B to C's merge)
                        await self.sync(who)
                    await self.call("list", {})  # the MCP server still answers after its tree was synced
                    self.session = None

    # -- checks -------------------------------------------------------------------------
    def check(self) -> dict:
        """Every acknowledged write in every clone (current, kept version or trash); no markers; doctor clean."""
        heads = {w: subprocess.run(["git", "-C", str(r), "rev-parse", "HEAD^{tree}"], capture_output=True,
                                   text=True).stdout.strip() for w, r in self.roots.items()}
        assert len(set(heads.values())) == 1, heads
        checked = 0
        found_somewhere: dict[tuple, int] = {}
        for who, root in self.roots.items():
            texts = {}
            for path in root.rglob("*.md"):  # the tree, .versions/ and .trash/
                if ".git" in path.parts:
                    continue
                text = path.read_text(encoding="utf-8")
                assert not MARKERS.search(text), f"conflict markers in {path}"
                texts[path] = text
            for entry_id, body in self.acked:
                places = [t for p, t in texts.items() if entry_id in t or p.parent.name == entry_id]
                here = any(body in t for t in places)
                found_somewhere[(entry_id, body)] = found_somewhere.get((entry_id, body), 0) + here
                # a deleted entry may have been deleted before it ever reached git: its trash keeps it
                assert here or entry_id in self.deleted, f"{who}: lost {entry_id}: {body}"
                checked += 1
            report = mem("doctor", "--root", str(root), machine=who)
            assert report["findings"] == [], (who, report["findings"])
        lost = [key for key, n in found_somewhere.items() if n == 0]
        assert not lost, lost
        return {"entries_checked": checked, "lost": 0, **self.counts}
