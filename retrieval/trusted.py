"""Rows made elsewhere (an index snapshot) checked against this tree's files before they are used."""
from __future__ import annotations

import hashlib

from memstrata.storage.errors import InvalidInput
from memstrata.retrieval import chunking, lexical
from memstrata.retrieval.table_rows import entry_chunks, index_units, meta_values, row_id, schema


def text_hash(text: str) -> str:
    """The hash a chunk-0 row's own text must have (chunking.content_hash of the text it was made from)."""
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:32]


def check_table(data, dim: int):
    """The snapshot's table in this build's schema, or InvalidInput (one line) before anything is replaced:
    every column present with its type, vectors of `dim` floats."""
    import pyarrow as pa

    want = schema(dim)
    names = set(data.schema.names)
    missing = [f.name for f in want if f.name not in names]
    if missing:
        raise InvalidInput(f"the index snapshot has no column {', '.join(missing[:5])}: not a table of this build; "
                           "nothing was replaced")
    vector = data.schema.field("vector").type
    size = getattr(vector, "list_size", None)
    if not pa.types.is_fixed_size_list(vector) or size != dim:
        have = f"{size} dims" if size is not None else str(vector)
        raise InvalidInput(f"the index snapshot's vectors have {have}, its model {dim}: nothing was replaced")
    try:
        return data.select([f.name for f in want]).cast(want)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInput(f"the index snapshot's columns do not have this build's types ({first}): "
                           "nothing was replaced") from None


def rows_matching_files(index, data, embedder, entries) -> tuple[object, list[str], list[str]]:
    """Keep the rows of each entry whose file this tree holds with the same text: the hash of the file,
    the hash of the row's own text, every chunk's text as chunking makes it from the file, finite
    vectors. Every other column is rewritten from the file. Returns (kept table, ids dropped, ids
    without a file here): a dropped entry is embedded again by the next sync, so a planted row (a
    kept hash with other text and another vector) never answers a query."""
    import numpy as np
    import pyarrow as pa

    files = {}
    for e in entries:
        for unit in index_units(index.root, e):  # a captured session: one row key per turn
            files.setdefault(row_id(unit), unit)
    cols = data.select(["id", "chunk", "kind", "text", "hash"]).to_pydict()
    vectors = data.column("vector").combine_chunks()
    flat = vectors.flatten().to_numpy(zero_copy_only=False).reshape(len(data), -1) if len(data) else np.zeros((0, 1))
    finite = np.isfinite(flat).all(axis=1) if len(data) else np.zeros(0, dtype=bool)
    rows_of: dict[str, list[int]] = {}
    for n, rid in enumerate(cols["id"]):
        rows_of.setdefault(rid, []).append(n)
    keep = np.zeros(len(data), dtype=bool)
    dropped, gone = [], []
    s = index.settings
    for rid, rows in rows_of.items():
        e = files.get(rid)
        if e is None:
            gone.append(rid)  # no such file here (deleted since the snapshot)
            continue
        want_hash = chunking.content_hash(e.title, e.body)
        chunks = entry_chunks(e, embedder, s)
        made = {c.number: c.text for c in chunks}
        full = made[0]
        ok = sorted(cols["chunk"][n] for n in rows) == list(range(len(rows)))
        for n in rows:
            number, text = cols["chunk"][n], cols["text"][n]
            ok = ok and cols["hash"][n] == want_hash and bool(finite[n])
            if cols["kind"][n] == "context":
                ok = ok and number == len(made) and (text or "").endswith("\n" + full)
            else:
                ok = ok and made.get(number) == text
        ok = ok and text_hash(full) == want_hash and len(rows) in (len(made), len(made) + 1)
        if ok:
            keep[rows] = True
        else:
            dropped.append(rid)
    kept = data.filter(pa.array(keep))
    return _columns_from_files(index, kept, files), sorted(dropped), sorted(gone)


def _columns_from_files(index, data, files: dict):
    """Every column but the texts and vectors (already checked) from the files; full-text columns
    made again from the checked text."""
    import pyarrow as pa

    if not len(data):
        return data
    ids = data.column("id").to_pylist()
    chunk = data.column("chunk").to_pylist()
    texts = data.column("text").to_pylist()
    meta = {rid: meta_values(index.root, e) for rid, e in files.items() if rid in set(ids)}
    for name in meta[ids[0]]:
        field = data.schema.field(name)
        column = pa.array([meta[rid][name] for rid in ids], type=field.type)
        data = data.set_column(data.schema.get_field_index(name), field, column)
    en = [lexical.en_text(t, files[rid].created, files[rid].tags) if c == 0 else None
          for rid, c, t in zip(ids, chunk, texts)]
    cjk = [lexical.cjk_text(t) if c == 0 else None for c, t in zip(chunk, texts)]
    for name, values in ((lexical.EN_COLUMN, en), (lexical.CJK_COLUMN, cjk)):
        field = data.schema.field(name)
        data = data.set_column(data.schema.get_field_index(name), field, pa.array(values, type=field.type))
    return data


def mismatched_rows(index) -> list[str]:
    """Ids whose chunk-0 row holds a text that does not hash to the row's hash (a planted row): for `mem doctor`."""
    table = index.table()
    if table is None:
        return []
    data = table.search().where("chunk = 0").select(["id", "text", "hash"]).limit(None).to_arrow().to_pydict()
    return sorted(rid for rid, text, digest in zip(data["id"], data["text"], data["hash"])
                  if text_hash(text) != digest)
