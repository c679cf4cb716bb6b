"""The trees bench/scale.py measures: a vault of real notes and a year of captured sessions, built
through the engine's own adopt and capture paths with each distinct text embedded once.

What a tree of N captured turns holds (one tree, an adopted vault with `capture_in_vault: true`):
- the vault: the notes corpora (/tmp/notes-corpora: til, rustbook, vuezh, vault, zettel; made by
  bench/notes_corpora.py) copied to `notes/c<k>/<corpus>/...` until it holds `vault` notes (copies
  keep their text: a copy's chunks are the same texts as the original's);
- the five LoCoMo conversations of ../shared/bench/locomo (26, 30, 41, 42, 43), each captured once
  from Claude Code transcripts (bench/capture_transcripts.py), one project each: their questions
  are the quality measure;
- filler: the other five LoCoMo conversations (44, 47, 48, 49, 50, from the public
  snap-research/locomo repository's data/locomo10.zip, read from the mirror `fetch` made) written as
  Claude Code transcripts again and again, each copy with new session ids and its dates moved on
  by a few days (so a year of sessions), in 20 projects, until the tree holds N turns.

How: `Memory.init(adopt=True)` and `Memory.capture(paths)` in this process (what `mem init
--adopt` and `mem capture` run), with one shortcut, said in the table: the embedder is the bundled
model behind a memo, so a text the model embedded once (in this build or an earlier one: the memo
is kept in the work folder) is not embedded again. Every vector in the tree is the model's vector
of its text; only the repeats are not recomputed. Embedding 300,000 turns for real takes hours on
2 cores; the rate of `mem capture` and `mem init --adopt` against the model alone on the same text
is measured separately (bench/scale.py, "rate" rows) on text embedded for real.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import zipfile
from datetime import timedelta
from pathlib import Path

import capture_transcripts as ct

HERE = Path(__file__).resolve().parent
LOCOMO = HERE.parent / ".." / "shared" / "bench" / "locomo"
FILLER_ZIP_MIRROR = Path("/work/.mirror/snap-research+locomo/repo")
FILLER_CONVS = ("44", "47", "48", "49", "50")
NOTES = Path("/tmp/notes-corpora")
CORPORA = ("til", "rustbook", "vuezh", "vault", "zettel")
PROJECTS = 20          # filler sessions are spread over this many projects
DAYS_PER_COPY = 3      # each filler copy is dated this many days after the one before


class MemoEmbedder:
    """The bundled model, each distinct text embedded once: vectors kept by the text's sha1 in
    memory and in `folder` (memo.npy + memo.json), so later builds reuse them. Everything but
    `embed` (token counts, queries, name, window) is the real embedder's."""

    def __init__(self, real, folder: Path):
        import numpy as np

        self._real, self._folder = real, Path(folder)
        self._np = np
        self._index: dict[str, int] = {}
        self._rows: list = []
        self.embedded = 0  # texts the model really embedded in this process
        self.reused = 0
        keys, vecs = self._folder / "memo.json", self._folder / "memo.npy"
        if keys.exists() and vecs.exists():
            self._index = {k: n for n, k in enumerate(json.loads(keys.read_text()))}
            self._rows = list(np.load(vecs))
            if len(self._rows) != len(self._index):
                self._index, self._rows = {}, []

    def __getattr__(self, name):
        return getattr(self._real, name)

    def embed(self, texts, batch_size: int = 32, progress=None):
        np = self._np
        keys = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._index))
        if missing:
            first = {k: t for k, t in zip(keys, texts) if k in set(missing)}
            made = self._real.embed([first[k] for k in missing], batch_size=batch_size)
            for k, v in zip(missing, made):
                self._index[k] = len(self._rows)
                self._rows.append(np.asarray(v, dtype=np.float32))
            self.embedded += len(missing)
        self.reused += len(texts) - len(missing)
        if progress is not None:
            progress(len(texts), len(texts))
        out = np.zeros((len(texts), self._real.dim), dtype=np.float32)
        for n, k in enumerate(keys):
            out[n] = self._rows[self._index[k]]
        return out

    def save(self) -> None:
        np = self._np
        self._folder.mkdir(parents=True, exist_ok=True)
        order = sorted(self._index, key=self._index.__getitem__)
        np.save(self._folder / "memo.npy.tmp.npy", np.asarray(self._rows, dtype=np.float32).reshape(-1, self._real.dim))
        os.replace(self._folder / "memo.npy.tmp.npy", self._folder / "memo.npy")
        (self._folder / "memo.json").write_text(json.dumps(order))


def filler_files(work: Path) -> list[Path]:
    """The five filler conversations as JSON files under work/filler (from the locomo mirror)."""
    out = work / "filler"
    files = [out / f"{c}.json" for c in FILLER_CONVS]
    if all(f.exists() for f in files):
        return files
    import subprocess

    if not FILLER_ZIP_MIRROR.exists():
        raise SystemExit("the filler conversations need the public snap-research/locomo repository: fetch it "
                         f"(the search tool's fetch, github:snap-research/locomo) to {FILLER_ZIP_MIRROR.parent}")
    out.mkdir(parents=True, exist_ok=True)
    data = subprocess.run(["git", f"--git-dir={FILLER_ZIP_MIRROR}", "show", "HEAD:data/locomo10.zip"],
                          capture_output=True, check=True).stdout
    (out / "locomo10.zip").write_bytes(data)
    with zipfile.ZipFile(out / "locomo10.zip") as z:
        for c, f in zip(FILLER_CONVS, files):
            f.write_bytes(z.read(f"data/multimodal_dialog/locomo10_v2/{c}.json"))
    return files


def conversation_turns(conv_file: Path) -> int:
    return sum(len(turns) for _, turns in ct.sessions(conv_file))


def write_transcripts(conv_file: Path, folder: Path, copy: int | None, project: str) -> tuple[list[Path], dict]:
    """Claude Code transcripts of one conversation (copy None: as it is; copy k: new session ids,
    dates k * DAYS_PER_COPY days later) under folder; ([paths], {(session, timestamp): dia_id})."""
    conv = conv_file.stem if copy is None else f"{conv_file.stem}-copy{copy}"
    shift = timedelta(days=0 if copy is None else copy * DAYS_PER_COPY)
    cwd = str(folder / "projects" / project)
    Path(cwd).mkdir(parents=True, exist_ok=True)
    paths, where = [], {}
    for n, turns in ct.sessions(conv_file):
        moved = [(dia, role, text, at + shift) for dia, role, text, at in turns]
        sid, lines, mapping = ct.claude_code(conv, n, moved, cwd)
        path = folder / "claude" / project / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
        where.update(mapping)
    return paths, where


def vault_notes(dest: Path, count: int) -> int:
    """Copy the notes corpora into dest (c<k>/<corpus>/...) until `count` notes; the notes written."""
    sources = [(c, p) for c in CORPORA for p in sorted((NOTES / c).rglob("*.md"))] if NOTES.exists() else []
    if not sources:
        raise SystemExit(f"no notes corpora in {NOTES}: run bench/notes_corpora.py first")
    written = 0
    copy = 0
    while written < count:
        for corpus, src in sources:
            if written >= count:
                break
            target = dest / f"c{copy}" / corpus / src.relative_to(NOTES / corpus)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
            written += 1
        copy += 1
    return written


def build(root: Path, turns: int, vault: int, work: Path, log) -> dict:
    """Build the tree at root (see the module's docstring); what it took and holds."""
    from memstrata import Memory
    from memstrata.models.embedder import get_embedder

    from memstrata.storage.config import Settings

    t0 = time.perf_counter()
    cpu0 = time.process_time()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    memo = MemoEmbedder(get_embedder(Settings().embedding_model), work / "memo")
    notes = vault_notes(root / "notes", vault)
    log(f"  {notes} notes copied; adopting")
    m = Memory(root, embedder=memo)
    m.init(adopt=True)
    m.config_set("capture_in_vault", "true")
    m.config_set("secrets", "warn")
    memo.save()
    log(f"  adopted in {time.perf_counter() - t0:.0f} s ({memo.embedded} texts embedded, {memo.reused} reused)")
    transcripts = work / "transcripts"
    evaluated = sorted(LOCOMO.glob("*.json"))
    where: dict = {}
    paths: list[Path] = []
    for f in evaluated:
        got, mapping = write_transcripts(f, transcripts, None, f"locomo-{f.stem}")
        paths += got
        where.update(mapping)
    held = sum(conversation_turns(f) for f in evaluated)
    fillers = filler_files(work)
    sizes = {f: conversation_turns(f) for f in fillers}
    copy = 0
    while held < turns:
        for f in fillers:
            if held >= turns:
                break
            got, _ = write_transcripts(f, transcripts, copy, f"proj{copy % PROJECTS}")
            paths += got
            held += sizes[f]
        copy += 1
    log(f"  {len(paths)} transcripts ({held} turns); capturing")
    done = 0
    for start in range(0, len(paths), 500):
        report = m.capture(paths[start:start + 500])
        done += report.get("turns", 0)
        memo.save()
        log(f"  captured {done} turns, {time.perf_counter() - t0:.0f} s, {memo.embedded} texts embedded, "
            f"{memo.reused} reused")
    synced = m.sync()  # the ANN index past ann_min_rows, compaction (what `mem sync` does after a capture)
    (root.parent / f"{root.name}.where.json").write_text(json.dumps({f"{s}\t{t}": d for (s, t), d in where.items()}))
    info = {"turns": held, "notes": notes, "transcripts": len(paths), "build_s": round(time.perf_counter() - t0),
            "build_cpu_s": round(time.process_time() - cpu0), "embedded": memo.embedded, "reused": memo.reused,
            "sync": {k: v for k, v in synced.items() if isinstance(v, (int, float, str))}}
    (root.parent / f"{root.name}.built.json").write_text(json.dumps(info))
    m.state.close()
    return info


def where_map(root: Path) -> dict:
    """{(session, timestamp): dia_id} of the evaluated conversations' turns in the tree at root."""
    data = json.loads((root.parent / f"{root.name}.where.json").read_text())
    return {tuple(k.split("\t")): v for k, v in data.items()}


def build_alone(root: Path, conv: str, work: Path) -> dict:
    """One evaluated conversation captured alone into its own tree (the transcripts, session ids and
    vectors of the big trees): its {(session, timestamp): dia_id}."""
    from memstrata import Memory
    from memstrata.models.embedder import get_embedder
    from memstrata.storage.config import Settings

    f = LOCOMO / f"{conv}.json"
    paths, where = write_transcripts(f, work / "transcripts", None, f"locomo-{conv}")
    if not (root / ".vectors").exists():
        shutil.rmtree(root, ignore_errors=True)
        memo = MemoEmbedder(get_embedder(Settings().embedding_model), work / "memo")
        m = Memory(root, embedder=memo)
        m.init()
        m.config_set("secrets", "warn")
        m.capture(paths)
        m.sync()
        memo.save()
        m.state.close()
    return where


def distinct_notes(dest: Path, count: int) -> int:
    """`count` notes of the corpora under dest, each a distinct text: the k-th copy of a note is
    named `<name> (k).md` (its title, so every chunk's text, differs)."""
    sources = [(c, p) for c in CORPORA for p in sorted((NOTES / c).rglob("*.md"))] if NOTES.exists() else []
    if not sources:
        raise SystemExit(f"no notes corpora in {NOTES}: run bench/notes_corpora.py first")
    shutil.rmtree(dest, ignore_errors=True)
    written = 0
    for copy in range(count // len(sources) + 1):
        for corpus, src in sources:
            if written >= count:
                return written
            rel = src.relative_to(NOTES / corpus)
            name = rel.name if copy == 0 else f"{rel.stem} ({copy}){rel.suffix}"
            target = dest / corpus / rel.parent / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
            written += 1
    return written


def session_texts(root: Path) -> list[str]:
    """The distinct texts the index of a tree of captured sessions had the model embed (a turn's
    chunks are embedded as they are stored)."""
    from memstrata import Memory

    table = Memory(root).state.vector_index().table()
    return list(dict.fromkeys(t for t in table.to_arrow().column("text").to_pylist() if t))
