"""A captured session's turns, each its own unit of the index (retrieval/units.py): ranked turn by
turn with the session's turns as neighbours, re-embedded only where the session changed, shown by
`mem read --turn`, and gone with the session. Sessions are written in the format of docs/capture.md."""
from __future__ import annotations

import json

from memstrata import Memory
from memstrata.cli.app import main

TURNS = [
    ("2026-12-05T08:14:49.123Z", "user", "Can you fix the login redirect? It loops after the SSO callback."),
    ("2026-12-05T08:15:02.456Z", "assistant", "The loop comes from the next parameter being encoded twice.\n"
                                              "→ Edit src/auth.py"),
    ("2026-12-05T08:16:10Z", "user", "Now the Postgres migration fails with a lock timeout on the orders table."),
    ("2026-12-05T08:17:31.5Z", "assistant", "I raised lock_timeout to 30s in the migration settings; it passes now."),
    ("2026-12-05T08:19:00.000Z", "user", "Thanks. Please also bump the version of the billing service."),
]
EXTRA = {"kind": "session", "agent": "claude-code", "session": "5f0c1d2e-aaaa-bbbb-cccc-000000000001",
         "project": "webapp", "cwd": "/work/webapp", "repo": "/work/webapp"}


def body(turns) -> str:
    return "\n\n".join(f"### {ts} · {role}\n{text}" for ts, role, text in turns) + "\n"


def write_session(m: Memory, turns=TURNS, **extra):
    meta = {**EXTRA, **extra, "started": turns[0][0], "ended": turns[-1][0], "turns": len(turns)}
    return m.write(body(turns), title=f"{meta['project']}: {turns[0][2][:60]}", category=f"sessions/{meta['project']}",
                   tags=["session", meta["agent"], meta["project"]], extra=meta, created=turns[0][0], force=True)


def test_each_turn_is_a_unit_with_its_time_and_its_session_as_neighbours(mem):
    from memstrata.retrieval.search import _structure
    from memstrata.retrieval import fusion

    note = mem.write("The orders table holds one row per order; its lock is taken by the nightly job.",
                     title="Orders table", category="sessions/webapp")  # a note beside the turns
    r = write_session(mem)
    mem.recall("warm up", count_access=False)
    index = mem._recall.state.vector_index()
    frame = index.frame()
    keys = [f"{r.id}#{n}" for n in range(1, 6)]
    assert [i for i in frame.ids if i.startswith(r.id)] == keys
    pos = [frame.pos[k] for k in keys]
    from memstrata.storage.clock import parse_datetime

    assert [frame.cols["created"][p] for p in pos] == [parse_datetime(ts).timestamp() for ts, _, _ in TURNS]
    prev, nxt, sitting = _structure(index, frame, fusion.FusionWeights.from_settings(mem.settings))
    assert [int(prev[p]) for p in pos] == [-1] + pos[:-1] and [int(nxt[p]) for p in pos] == pos[1:] + [-1]
    assert len({int(sitting[p]) for p in pos}) == 1
    n = frame.pos[note.id]  # the note written beside them is no turn of the session
    assert prev[n] == -1 and nxt[n] == -1 and sitting[n] not in {int(sitting[p]) for p in pos}


def test_hits_are_turns_with_their_timestamp_session_agent_and_project(mem):
    r = write_session(mem)
    hits = mem.recall("postgres migration lock timeout", min_relevance=0, count_access=False).results
    turns = [h for h in hits if h.id == r.id]
    assert [h.turn for h in turns][:2] == [3, 4]  # the question, then the answer: not one hit per session
    top = turns[0].to_dict()
    assert top["timestamp"] == "2026-12-05T08:16:10Z" and top["session"] == EXTRA["session"]
    assert (top["agent"], top["project"]) == ("claude-code", "webapp")
    assert "lock timeout" in top["snippet"] and top["title"].startswith("webapp: ")
    assert turns[1].to_dict()["timestamp"] == "2026-12-05T08:17:31.5Z"  # verbatim, as the heading wrote it


def test_a_growing_session_embeds_only_its_new_turn(mem, embedder, monkeypatch):
    r = write_session(mem, TURNS[:4])
    seen: list[str] = []
    real = embedder.embed

    def counting(texts, *args, **kwargs):
        seen.extend(texts)
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(embedder, "embed", counting)
    mem.update(r.id, body=body(TURNS))
    assert seen and all(TURNS[4][2] in t for t in seen), seen  # the new turn (its sentences, its context chunk)
    index = mem._recall.state.vector_index()
    assert [i for i in index.frame().ids if i.startswith(r.id)] == [f"{r.id}#{n}" for n in range(1, 6)]
    seen.clear()
    # a hand edit of one turn in the middle: that turn, and the turn after it (its context chunk holds it)
    path = mem.root / r.path
    path.write_text(path.read_text().replace("encoded twice", "encoded two times"))
    assert mem.sync()["embedded"] == 1
    assert seen and all("encoded two times" in t or t.startswith(TURNS[2][2]) for t in seen), seen
    assert mem.recall("next parameter encoded two times", min_relevance=0).results[0].turn == 2


def test_read_turn_around_and_errors(tmp_path, capsys, embedder):
    root = str(tmp_path / "mem")
    m = Memory(root, embedder=embedder)
    m.init()
    r = write_session(m)
    note = m.write("Deploys go out on Tuesdays.", title="Deploy day", category="notes")
    assert main(["read", r.id, "--turn", "3", "--around", "1", "--root", root, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["turn"] for t in data["turns"]] == [2, 3, 4] and data["turn"] == 3
    assert data["turns"][1] == {"turn": 3, "timestamp": "2026-12-05T08:16:10Z", "role": "user", "text": TURNS[2][2]}
    assert (data["session"], data["agent"], data["project"]) == (EXTRA["session"], "claude-code", "webapp")
    assert main(["read", r.id, "--turn", "5", "--around", "9", "--root", root]) == 0
    out = capsys.readouterr().out
    assert "### 2026-12-05T08:14:49.123Z · user" in out and out.count("\n### ") == 5
    assert main(["read", r.id, "--turn", "6", "--root", root]) != 0
    assert "mem: error:" in capsys.readouterr().err
    assert main(["read", note.id, "--turn", "1", "--root", root]) != 0
    assert "not a captured session" in capsys.readouterr().err
    assert main(["recall", "lock timeout postgres", "--min-relevance", "0", "--root", root, "--json"]) == 0
    hit = json.loads(capsys.readouterr().out)["results"][0]
    assert {"turn", "timestamp", "session", "agent", "project"} <= set(hit) and hit["turn"] == 3


def test_doctor_is_healthy_after_sessions_come_and_go(mem):
    a = write_session(mem)
    again = [(ts.replace("2026-12-05", "2026-12-06"), role, text + " (again)") for ts, role, text in TURNS]
    b = write_session(mem, again, session="5f0c1d2e-aaaa-bbbb-cccc-000000000002")
    mem.recall("warm up", count_access=False)
    assert not [f for f in mem.doctor().findings if f.kind.startswith("vectors")]
    mem.delete(a.id)
    index = mem._recall.state.vector_index()
    index.refresh()
    assert not [i for i in index.frame().ids if i.startswith(a.id)]
    assert [i for i in index.frame().ids if i.startswith(b.id)] == [f"{b.id}#{n}" for n in range(1, 6)]
    assert not [f for f in mem.doctor().findings if f.kind.startswith("vectors")]
    assert mem.sync()["embedded"] == 0
    # a session file removed by hand: its turns leave the index at the next sync
    (mem.root / mem.resolve(b.id).path).unlink()
    assert mem.sync()["removed"] == 1  # one entry (its five turns: rows)
    assert not mem._recall.state.vector_index().frame().ids


def test_an_aged_session_keeps_its_turns_findable_with_their_times(mem, monkeypatch, use_daily):
    """Compressed (warm, cold) and then archived: the file holds a summary, the turns are found by
    their full text (.full/) with their timestamps, and `read --turn` shows them."""
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-12-05T09:00:00Z")
    long_turns = [(ts, role, text + " " + " ".join(f"Detail {n} of this step is logged." for n in range(8)))
                  for ts, role, text in TURNS]
    r = write_session(mem, long_turns)
    other = mem.write("A note read every day.", title="Daily", category="notes")
    for first, day, layer in (("2026-12-06", "2026-12-20", "L1"), ("2026-12-21", "2027-03-20", "L4")):
        use_daily(mem, first, day, other.id)  # the tree is in use: its days count for aging
        mem.maintain()
        entry = mem.resolve(r.id)
        assert entry.layer == layer and "### 2026-12-05T08:16:10Z · user" not in entry.body
        hits = mem.recall("postgres migration lock timeout orders table", min_relevance=0, count_access=False).results
        assert (hits[0].id, hits[0].turn, hits[0].timestamp) == (r.id, 3, "2026-12-05T08:16:10Z")
        assert hits[0].path == entry.path
        view = mem.read_turns(r.id, 4, count_access=False)
        assert view.turns[0]["timestamp"] == "2026-12-05T08:17:31.5Z" and "lock_timeout" in view.turns[0]["text"]
        assert not [f for f in mem.doctor().findings if f.kind.startswith("vectors")]
    assert entry.status == "archived" and "/archived/" in entry.path


def test_a_file_that_stops_or_starts_being_a_session_is_indexed_as_it_now_is(mem):
    r = write_session(mem)
    path = mem.root / r.path
    text = path.read_text()
    path.write_text(text.replace("kind: session\n", ""))  # edited by hand: now a plain note
    mem.sync()
    index = mem._recall.state.vector_index()
    assert [i for i in index.frame().ids if i.startswith(r.id)] == [r.id]
    hit = mem.recall("postgres migration lock timeout", min_relevance=0).results[0]
    assert (hit.id, hit.turn) == (r.id, None)
    path.write_text(text)
    mem.sync()
    assert [i for i in index.frame().ids if i.startswith(r.id)] == [f"{r.id}#{n}" for n in range(1, 6)]
    assert not [f for f in mem.doctor().findings if f.kind.startswith("vectors")]


def _claude_line(n: int, role: str, text: str, at: str) -> str:
    message = {"role": "user", "content": text} if role == "user" else \
        {"role": "assistant", "id": f"msg_{n}", "type": "message", "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": role, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None, "isSidechain": False,
                       "sessionId": "7e1d0c55-1111-2222-3333-444455556666", "cwd": "/work/webapp", "timestamp": at,
                       "message": message})


def test_captured_transcript_turns_are_recalled_grow_by_one_and_go_with_the_session(mem, embedder, monkeypatch,
                                                                                    tmp_path):
    """Through `mem capture` (memstrata/capture): a Claude Code transcript's turns are hits of their own;
    a turn appended to it is the only one embedded; forgetting the session leaves no row and a healthy tree."""
    transcript = tmp_path / "7e1d0c55-1111-2222-3333-444455556666.jsonl"
    lines = [_claude_line(n, role, text, ts) for n, (ts, role, text) in enumerate(TURNS[:4])]
    transcript.write_text("\n".join(lines) + "\n")
    assert mem.capture([str(transcript)])["turns"] == 4
    hit = mem.recall("postgres migration lock timeout", min_relevance=0, count_access=False).results[0]
    assert (hit.turn, hit.timestamp, hit.session, hit.session_agent) == (
        3, "2026-12-05T08:16:10Z", "7e1d0c55-1111-2222-3333-444455556666", "claude-code")
    session = hit.id
    seen: list[str] = []
    real = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts, *a, **k: (seen.extend(texts), real(texts, *a, **k))[1])
    transcript.write_text("\n".join(lines + [_claude_line(4, TURNS[4][1], TURNS[4][2], TURNS[4][0])]) + "\n")
    assert mem.capture([str(transcript)])["turns"] == 1
    assert seen and all(TURNS[4][2] in t for t in seen), seen
    hit = mem.recall("bump the version of the billing service", min_relevance=0, count_access=False).results[0]
    assert (hit.id, hit.turn, hit.timestamp) == (session, 5, "2026-12-05T08:19:00.000Z")
    mem.capture_forget("7e1d0c55")
    index = mem._recall.state.vector_index()
    index.refresh()
    assert not [i for i in index.frame().ids if i.startswith(hit.id)]
    assert not [f for f in mem.doctor().findings if f.kind.startswith("vectors")]


def test_autoload_hands_out_the_turn_it_found_with_its_neighbours(mem):
    """A prompt's context that a turn answers: the block holds that turn and the turns beside it,
    not the whole session (one that fits the block's share was handed out whole)."""
    write_session(mem)
    result = mem.autoload(context="why did the postgres migration fail with a lock timeout?", hot=False)
    item = next(i for i in result.items if i.section == "relevant")
    assert item.text.startswith("### 2026-12-05T08:15:02.456Z · assistant\nThe loop comes from")
    assert "lock timeout on the orders table" in item.text and "lock_timeout to 30s" in item.text
    assert "Can you fix the login redirect" not in item.text and "billing service" not in item.text
