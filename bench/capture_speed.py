"""Capture's write path against the model: how fast `mem capture` takes a long transcript, compared
with the bundled model embedding the same text (issue 38: capture rate >= 0.8x the model's own rate).

Usage:
  python bench/capture_speed.py                 # LoCoMo conversation 26 as one Claude Code session
  python bench/capture_speed.py --convs 26 30   # several conversations, one session each
  python bench/capture_speed.py --appends 40    # also: a hook after each of the last 40 replies
  python bench/capture_speed.py --hook-runs 20  # also: the wall time of `mem capture --hook` itself

What is measured, in this process, the model loaded once before the clock starts (service off):
  - a Claude Code transcript made from LoCoMo conversations (../shared/bench/locomo: speaker_a is
    the user, speaker_b the assistant, each turn prefixed with the speaker's name, a turn every 30 s
    from the session's date), with a tool call and a 2 KB tool output after every fourth reply
    (read and left out, as in a real transcript);
  - `Memory.capture([path])` into a fresh tree: wall seconds, turns/s;
  - the model alone embedding the texts that capture had it embed (the chunks of the session entries,
    as the index makes them, each distinct text once, the embedder's own batching): wall seconds;
  - the ratio model seconds / capture seconds (1.0: capture costs no more than embedding its text).
  - with --appends N: the transcript captured up to N replies before its end, then one capture per
    reply, as a Stop hook runs it (in process, no hook process start): seconds per append.
  - with --hook-runs N: `mem capture --hook` (a real process, as an agent runs it, its payload on stdin)
    against `python -c pass` with the same interpreter, alternately, medians: what the hook costs
    the agent (it returns once the notice is written and the background capture is started).
Wall times depend on the machine's load: the script prints the load average; compare on a quiet one.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEMSTRATA_SERVICE", "off")

LOCOMO = Path(__file__).resolve().parents[1] / ".." / "shared" / "bench" / "locomo"
TOOL_OUTPUT = "x" * 2048


def _when(text: str) -> datetime:
    """LoCoMo's '1:56 pm on 8 May, 2023'."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def transcript_lines(conv: dict, session_id: str, cwd: str) -> list[dict]:
    """A Claude Code session's lines for one LoCoMo conversation."""
    a = conv["speaker_a"]
    lines, n = [], 0
    sessions = sorted(int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1)
    for s in sessions:
        start = _when(conv[f"session_{s}_date_time"])
        for i, turn in enumerate(conv[f"session_{s}"]):
            n += 1
            stamp = (start + timedelta(seconds=30 * i)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            text = f"{turn['speaker']}: {turn['text']}"
            base = {"timestamp": stamp, "sessionId": session_id, "cwd": cwd, "uuid": f"u{n}", "isSidechain": False}
            if turn["speaker"] == a:
                lines.append({**base, "type": "user", "message": {"role": "user", "content": text}})
            else:
                lines.append({**base, "type": "assistant", "message": {"role": "assistant", "content": [
                    {"type": "text", "text": text}]}})
                if n % 4 == 0:
                    lines.append({**base, "uuid": f"t{n}", "type": "assistant", "message": {"role": "assistant", "content": [
                        {"type": "tool_use", "id": f"tool{n}", "name": "Bash", "input": {"command": f"grep -rn note{n} ."}}]}})
                    lines.append({**base, "uuid": f"r{n}", "type": "user", "toolUseResult": {"stdout": TOOL_OUTPUT},
                                  "message": {"role": "user", "content": [
                                      {"type": "tool_result", "tool_use_id": f"tool{n}", "content": TOOL_OUTPUT}]}})
    return lines


def embedded_texts(mem, ids: list[str]) -> list[str]:
    """The distinct texts the index had the model embed for these entries (rows_for's chunks)."""
    from memstrata.retrieval import chunking

    s, emb = mem.settings, mem.embedder
    texts: dict[str, None] = {}
    for entry_id in ids:
        e = mem.read(entry_id, count_access=False)
        for c in chunking.chunk_entry(e.title, e.body, emb.count_tokens, emb.max_tokens, s.chunk_overlap_tokens,
                                      s.chunk_max_sentences, s.chunk_sentence_min_words):
            if not c.pooled:
                texts[c.embedded] = None
    return list(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--convs", nargs="+", default=["26"])
    parser.add_argument("--appends", type=int, default=0)
    parser.add_argument("--hook-runs", type=int, default=0)
    args = parser.parse_args()
    from memstrata import Memory
    from memstrata.models.embedder import get_embedder

    embedder = get_embedder("bundled")
    embedder.embed(["warm up"])
    work = Path(tempfile.mkdtemp(prefix="capture-speed-"))
    try:
        paths, turns = [], 0
        for name in args.convs:
            conv = json.loads((LOCOMO / f"{name}.json").read_text())
            lines = transcript_lines(conv, f"locomo-{name}-session", str(work))
            turns += sum(1 for x in lines if not x["uuid"][0] in "tr")
            path = work / f"locomo-{name}-session.jsonl"
            path.write_text("".join(json.dumps(x) + "\n" for x in lines))
            paths.append(path)
        mem = Memory(work / "mem", embedder=embedder)
        mem.init()
        started = time.perf_counter()
        report = mem.capture(paths)
        capture_s = time.perf_counter() - started
        ids = [e["id"] for e in report["entries"]]
        texts = embedded_texts(mem, ids)
        started = time.perf_counter()
        embedder.embed(texts)
        model_s = time.perf_counter() - started
        load = os.getloadavg()[0]
        print(f"load average {load:.1f} (2 cores)")
        print(f"transcript: {len(args.convs)} conversation(s), {turns} turns, {sum(p.stat().st_size for p in paths) / 1e6:.1f} MB; "
              f"captured {report['turns']} turns into {len(ids)} entries ({len(texts)} chunk texts embedded)")
        print(f"capture: {capture_s:.2f} s ({report['turns'] / capture_s:.0f} turns/s); model alone on the same "
              f"texts: {model_s:.2f} s; ratio model/capture = {model_s / capture_s:.2f} (target >= 0.8)")
        if args.appends:
            _appends(embedder, work, args.convs[0], args.appends)
        if args.hook_runs:
            _hook_runs(work, args.hook_runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _appends(embedder, work: Path, name: str, count: int) -> None:
    """A hook after each of the last `count` replies: the cost of one append to a long session."""
    from memstrata import Memory

    conv = json.loads((LOCOMO / f"{name}.json").read_text())
    lines = transcript_lines(conv, f"appends-{name}", str(work))
    replies = [i for i, x in enumerate(lines) if x["type"] == "assistant" and x["uuid"].startswith("u")]
    cut = replies[-count - 1] + 1
    mem = Memory(work / "appends", embedder=embedder)
    mem.init()
    path = work / "appends.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines[:cut]))
    mem.capture([path])
    times = []
    for end in replies[-count:]:
        path.write_text("".join(json.dumps(x) + "\n" for x in lines[:end + 1]))
        started = time.perf_counter()
        mem.capture([path])
        times.append(time.perf_counter() - started)
    times.sort()
    print(f"appends: {count} captures of one more reply to a {len(replies)}-reply session: median "
          f"{times[len(times) // 2]:.2f} s, max {times[-1]:.2f} s")


def _hook_runs(work: Path, runs: int) -> None:
    """The hook's wall time, as the agent waits for it, against a bare interpreter start."""
    import subprocess

    mem = Path(sys.executable).with_name("mem")
    transcript = work / "locomo-hook.jsonl"
    transcript.write_text(json.dumps({"type": "user", "timestamp": "2026-11-20T09:00:00.000Z", "sessionId": "hook",
                                      "message": {"role": "user", "content": "hello"}}) + "\n")
    payload = json.dumps({"session_id": "hook", "transcript_path": str(transcript), "cwd": str(work),
                          "hook_event_name": "Stop"})
    env = {**os.environ, "MEMSTRATA_HOME": str(work / "mem")}
    hook, bare = [], []
    for _ in range(runs):
        for command, into in (([str(mem), "capture", "--hook"], hook), ([sys.executable, "-c", "pass"], bare)):
            started = time.perf_counter()
            subprocess.run(command, input=payload, text=True, env=env, capture_output=True, check=True)
            into.append(time.perf_counter() - started)
    time.sleep(5)  # the background captures it started
    hook.sort()
    bare.sort()
    print(f"hook: `mem capture --hook` median {hook[runs // 2] * 1000:.0f} ms (p90 {hook[int(runs * 0.9)] * 1000:.0f}); "
          f"`python -c pass` median {bare[runs // 2] * 1000:.0f} ms; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
