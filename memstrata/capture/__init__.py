"""Capture: the transcripts coding agents write (Claude Code, Codex CLI, a plain JSONL) kept as
Markdown session entries, turn by turn, with no LLM (docs/capture.md).

- `model.py`, `claude.py`, `codex.py`, `plain.py`, `detect.py`: the readers, pure functions of the
  lines they are given (no IO): turns, session facts, lines skipped by reason.
- `storage/session_body.py` (in the lowest layer, for the index too): the session body format (one `### <timestamp> · <role>` block per turn), parsed and
  rendered, and the merge of newly read turns into the turns an entry holds (pure).
- `sessions.py`: session entries (id, path, frontmatter, parts) built from turns.
- `project.py`: the project of a cwd (its git repository) and the per-project opt-out.
- `spool.py`, `hook.py`: what a hook leaves for the capture (stdlib only: the hook returns at once).
- `state.py`: what was read of each transcript (`.cache/capture/`, derived: a lost cache re-reads,
  and the turns the entries hold keep a turn from being written twice).
- `feature.py`: `Capture`, the engine side (Memory wires it), `privacy.py`: team sync and forget.
"""
