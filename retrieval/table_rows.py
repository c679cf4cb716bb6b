"""What a row of the chunk table holds: the schema, an entry's row key and indexed form, its chunks embedded into rows."""
from __future__ import annotations

import os
from pathlib import Path

from memstrata.retrieval import chunking, lexical, names, readable
from memstrata.retrieval.embed_batch import embed_distinct, pooled_vector
from memstrata.retrieval.units import INDEXED, is_unit, turn_of, units
from memstrata.storage.entry import Entry
from memstrata.storage.sidecars import with_full_body
from memstrata.storage.turns import is_session
from memstrata.storage.versions import with_kept_versions


def row_id(entry: Entry) -> str:
    """The row key of an entry: its id (a file without one is keyed by its path)."""
    return entry.id or f"path:{entry.path}"


def indexed_form(root: Path, entry: Entry) -> Entry:
    """The entry as the index (and grep) sees it: a compressed entry carries its full original
    text, and an entry with kept versions carries their text after its own (storage.versions).

    The one place of the rules "a compressed entry is found by what it said before compression"
    and "an old version stays findable"; `VectorIndex.upsert` applies it to whatever it is given,
    so no writer has to remember it. Applying it twice changes nothing (the result is marked).
    A captured session keeps no earlier versions in it: each is a part of it (turns are only added),
    and its last turn would carry them all.
    """
    if entry.extra.get(INDEXED):
        return entry
    full = with_full_body(root, entry)
    # a note's frontmatter aliases are other titles: a line under the title (retrieval.names)
    indexed = names.with_aliases(full if is_session(entry) else with_kept_versions(root, full))
    indexed = indexed.copy(extra={**indexed.extra, INDEXED: True}) if indexed is not entry else \
        entry.copy(extra={**entry.extra, INDEXED: True})
    indexed.read_stamp = entry.read_stamp  # the same file as read: its row records that stamp
    return indexed


def index_units(root: Path, entry: Entry) -> list[Entry]:
    """What the index holds of an entry, one Entry per row key: its indexed form, or a captured
    session's turns (retrieval.units). Sync, the doctor and snapshots compare rows with these."""
    return units(indexed_form(root, entry))


def session_context(parts: list[Entry]) -> dict[str, str]:
    """The context chunk's text of each turn of one session (`parts`: its units in order): the turn
    before it in the session, when both are short, as `previous_texts` gives an imported turn the
    entry written just before it."""
    out = {}
    for before, unit in zip(parts, parts[1:]):
        prev, text = (chunking.entry_text(u.title, u.body) for u in (before, unit))
        if _short(prev) and _short(text) and turn_of(before.id) is not None:
            out[unit.id] = prev
    return out


def _short(text: str) -> bool:
    """Short enough to be a conversation's turn (the bound fusion.time_structure puts on files)."""
    from memstrata.retrieval.fusion import CONVERSATION_MAX_BYTES

    return len(text.encode("utf-8")) <= CONVERSATION_MAX_BYTES


def _ts(dt) -> float | None:
    return dt.timestamp() if dt is not None else None


def schema(dim: int):
    import pyarrow as pa

    return pa.schema([
        ("id", pa.string()), ("chunk", pa.int32()), ("kind", pa.string()), ("text", pa.string()),
        (lexical.EN_COLUMN, pa.string()), (lexical.CJK_COLUMN, pa.string()),
        ("vector", pa.list_(pa.float32(), dim)),
        ("title", pa.string()), ("category", pa.string()), ("tier", pa.string()), ("status", pa.string()),
        ("tags", pa.list_(pa.string())), ("importance", pa.float64()), ("weight", pa.float64()),
        ("created", pa.float64()), ("updated", pa.float64()), ("last_access", pa.float64()),
        ("path", pa.string()), ("hash", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64()),
    ])


def rows_for(index, entries: list[Entry], embedder, progress=None, context: dict | None = None,
             known: dict | None = None) -> list[dict]:
    """Chunk and embed entries (one batched call) into rows of `index` (a VectorIndex: its settings, root,
    and the entries written before them for the context chunk; a session's turns: `context`,
    `session_context` of the whole session). `known`: (kind, text) -> vector of the chunks the
    entries' old rows hold (same model): a chunk whose kind and stored text are unchanged embeds the
    same text (the embedded form is a function of them), so its vector is reused (a turn whose text
    grew keeps its unchanged sentences' vectors)."""
    s = index.settings
    known = known or {}
    per_entry = []
    texts = []
    before = {**previous_texts(index, [e for e in entries if not is_unit(row_id(e))]), **(context or {})} \
        if s.chunk_context else {}
    for e in entries:
        chunks = entry_chunks(e, embedder, s)
        prev = before.get(row_id(e))
        if prev:
            context = chunking.Chunk(len(chunks), "context", chunking.context_text(prev, chunks[0].text))
            if not getattr(embedder, "reads_cjk", True):
                context = readable.readable_chunk(context, embedder.count_tokens, _budget(embedder))
            if context is not None:
                chunks.append(context)
        per_entry.append(chunks)
        texts.extend(c.embedded for c in chunks if not c.pooled and (c.kind, c.text) not in known)
    vectors = iter(embed_distinct(embedder, texts, progress))
    rows = []
    for e, chunks in zip(entries, per_entry):
        base = meta_values(index.root, e)
        full = chunks[0].text
        own = [known[(c.kind, c.text)] if (c.kind, c.text) in known else next(vectors)
               for c in chunks if not c.pooled]
        embedded = iter(own)
        for c in chunks:
            first = c.number == 0
            vector = pooled_vector(own, chunks) if c.pooled else next(embedded)
            rows.append({**base, "chunk": c.number, "kind": c.kind, "text": c.text,
                         lexical.EN_COLUMN: lexical.en_text(full, e.created, e.tags) if first else None,
                         lexical.CJK_COLUMN: lexical.cjk_text(full) if first else None,
                         "vector": vector})
    return rows


def entry_chunks(e: Entry, embedder, s) -> list:
    """The chunks an entry is embedded as (chunking.chunk_entry), less what `embedder` cannot read
    (retrieval/readable.py: mostly-CJK chunks with an English-only model)."""
    chunks = chunking.chunk_entry(e.title, e.body, embedder.count_tokens, embedder.max_tokens,
                                  s.chunk_overlap_tokens, s.chunk_max_sentences, s.chunk_sentence_min_words)
    if getattr(embedder, "reads_cjk", True):
        return chunks
    return readable.readable(chunks, embedder.count_tokens, _budget(embedder))


def _budget(embedder) -> int:
    return max(16, embedder.max_tokens - 8)  # the window less the special tokens (chunking.chunk_entry's)


def arrow_rows(table, rows: list[dict]):
    """The rows as one Arrow table of `table`'s schema; the vectors go in as one float32
    block (a list of Python floats per row was most of the cost of a write)."""
    import numpy as np
    import pyarrow as pa

    full = table.schema
    dim = full.field("vector").type.list_size
    vectors = np.asarray([r["vector"] for r in rows], dtype=np.float32).reshape(len(rows), dim)
    others = pa.schema([f for f in full if f.name != "vector"])
    data = pa.Table.from_pylist([{k: v for k, v in r.items() if k != "vector"} for r in rows], schema=others)
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), dim)
    return data.append_column(full.field("vector"), column).select(full.names)


def previous_texts(index, entries: list[Entry]) -> dict[str, str]:
    """For each entry, the text of the entry written just before it in its category, if that
    was within the sitting gap (from this batch or the table): its context chunk."""
    import bisect

    gap = 60.0 * index.settings.recall_session_gap_minutes
    timeline: dict[str, list[tuple[float, str]]] = {}
    texts: dict[str, str] = {}
    for e in entries:
        if e.created is not None:
            timeline.setdefault(e.category, []).append((e.created.timestamp(), row_id(e)))
            texts[row_id(e)] = chunking.entry_text(e.title, e.body)
    frame = index.frame()
    if frame is not None:
        wanted = set(timeline)
        for n, cat in enumerate(frame.cols["category"]):
            ts = frame.cols["created"][n]
            # a session's turns are the turns of their session only (session_context)
            if cat in wanted and ts is not None and frame.ids[n] not in texts and not is_unit(frame.ids[n]):
                timeline[cat].append((ts, frame.ids[n]))
    for items in timeline.values():
        items.sort()
    out: dict[str, str] = {}
    missing: dict[str, str] = {}
    for e in entries:
        if e.created is None:
            continue
        items = timeline[e.category]
        ts = e.created.timestamp()
        i = bisect.bisect_left(items, (ts, "")) - 1
        # a conversation's turn (fusion.time_structure): written after the one before, both short
        if (i >= 0 and 0 < ts - items[i][0] <= gap and items[i][1] != row_id(e)
                and _short(chunking.entry_text(e.title, e.body))):
            prev = items[i][1]
            if prev in texts:
                if _short(texts[prev]):
                    out[row_id(e)] = texts[prev]
            else:
                missing[row_id(e)] = prev
    if missing:
        rows = index.fetch_rows(sorted(set(missing.values())))
        for rid, prev in missing.items():
            if rows.get(prev) and _short(rows[prev][0]["text"]):
                out[rid] = rows[prev][0]["text"]
    return out


def meta_values(root: Path, e: Entry) -> dict:
    """The metadata columns of `e`'s rows (its file's size and mtime: how sync sees it changed)."""
    try:  # the file as its text was read; an entry the engine just wrote: as it is now
        size, mtime = e.read_stamp[:2] if e.read_stamp else (lambda st: (st.st_size, st.st_mtime_ns))(
            os.stat(root / e.path))
    except (OSError, TypeError):
        size, mtime = -1, -1
    return {"id": row_id(e), "title": e.title, "category": e.category, "tier": e.tier, "status": e.status,
            "tags": list(e.tags), "importance": float(e.importance),
            "weight": float(e.weight) if e.weight is not None else None,
            "created": _ts(e.created), "updated": _ts(e.updated), "last_access": _ts(e.last_access),
            "path": e.path, "hash": chunking.content_hash(e.title, e.body), "size": size, "mtime_ns": mtime}
