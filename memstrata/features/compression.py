"""What a compressed entry's body keeps at each layer: key points, one line and tags, a paragraph."""
from __future__ import annotations

import re

from memstrata.storage.entry import Entry

_NOTE_TEXT = (r"_\[L[1-4]: [^\]\n]*\] Full text in `[^`\n]*`: `mem decompress [^`\n]*` prints it, "
              r"`--restore` brings it back\._")
_NOTE = re.compile(r"\s*" + _NOTE_TEXT + r"\s*$")
_NOTE_LINE = re.compile(_NOTE_TEXT)

LAYER_LABELS = {"L0": "full text", "L1": "key points", "L2": "one line and tags", "L3": "one line and tags",
                "L4": "archive summary"}


def compressed_body(original: str, layer: str, entry: Entry, rel: str, embedder, settings) -> tuple[str, str | None]:
    """The body a layer keeps in the tree, and the `summary:` value (L4 only), from the original body.

    L1: up to compress_key_points key points as a list; L2/L3: the most central sentence and
    the tags; L4: a paragraph of summary_sentences sentences (and summary "one | paragraph").
    Each ends with a note naming the sidecar, so a person reading the file knows where the
    full text is.
    """
    from memstrata.models import summarize

    note = _note(layer, entry, rel)
    tags = _tags(entry)
    summary = None
    if layer == "L1":
        points = summarize.key_points(original, embedder, max_points=max(1, settings.compress_key_points))
        parts = ["\n".join(p if "\n" in p else f"- {p}" for p in points)] if points else []
    elif layer in ("L2", "L3"):
        parts = [summarize.one_sentence(original, embedder), tags]
    else:
        one = summarize.one_sentence(original, embedder)
        para = summarize.paragraph(original, embedder, max_sentences=max(1, settings.summary_sentences))
        summary = f"{one} | {para}" if one and para and one != para else (one or para or None)
        parts = [para, tags]
    parts = [p for p in parts if p and p.strip()]
    return "\n\n".join(parts + [note]) + "\n", summary


def _note(layer: str, entry: Entry, rel: str) -> str:
    return (f"_[{layer}: {LAYER_LABELS.get(layer, 'compressed')}] Full text in `{rel}`: "
            f"`mem decompress {entry.id} --show` prints it, `--restore` brings it back._")


def _tags(entry: Entry) -> str:
    return f"Tags: {', '.join(entry.tags)}" if entry.tags else ""


def smallest_body(original: str, layer: str, entry: Entry, rel: str, settings) -> int:
    """A lower bound, in bytes, of compressed_body's body (no model needed): the layer's note,
    the tags line and the shortest units the layer could choose."""
    from memstrata.models.summarize import units

    sizes = sorted(len(u.encode("utf-8")) for u in units(original))
    keeps = {"L1": settings.compress_key_points, "L2": 1, "L3": 1}.get(layer, settings.summary_sentences)
    k = min(len(sizes), max(1, keeps))
    parts = [sum(sizes[:k]) + k - 1] if k else []
    if layer != "L1" and _tags(entry):
        parts.append(len(_tags(entry).encode("utf-8")))
    parts.append(len(_note(layer, entry, rel).encode("utf-8")))
    return sum(parts) + 2 * (len(parts) - 1) + 1


def largest_body(original: str, layer: str, entry: Entry, rel: str, settings) -> int:
    """An upper bound, in bytes, of compressed_body's body (no model needed): the layer's note, the
    tags line and the longest units the layer could choose, with room for list marks and stops."""
    from memstrata.models.summarize import units

    sizes = sorted((len(u.encode("utf-8")) for u in units(original)), reverse=True)
    # L2/L3's one line is one unit, or a label joined with the unit it labels (summarize.one_sentence)
    keeps = {"L1": settings.compress_key_points, "L2": 2, "L3": 2}.get(layer, settings.summary_sentences)
    k = min(len(sizes), max(1, keeps))
    parts = [sum(sizes[:k]) + 4 * k]
    if layer != "L1" and _tags(entry):
        parts.append(len(_tags(entry).encode("utf-8")))
    parts.append(len(_note(layer, entry, rel).encode("utf-8")))
    return sum(parts) + 2 * len(parts) + 1


def surely_shrinks(original: str, layer: str, entry: Entry, rel: str, settings) -> bool:
    """Whether compressing to `layer` makes the body smaller whatever units the model picks."""
    return largest_body(original, layer, entry, rel, settings) < len((original or "").encode("utf-8"))


def may_shrink(original: str, layer: str, entry: Entry, rel: str, settings) -> bool:
    """Whether compressing to `layer` can make the entry's body smaller than its full original
    (no model needed): a one-sentence entry never can (its summary is itself plus the note)."""
    return smallest_body(original, layer, entry, rel, settings) < len((original or "").encode("utf-8"))


def shrinks(original: str, compressed: str) -> bool:
    """Whether a compressed body is smaller than the full original it stands for: a compression
    that would make an entry larger than what it said is not done. (A deeper layer may keep more
    than a shallower one: L4's paragraph is longer than L2's line, and both are smaller than the whole.)"""
    return len(compressed.encode("utf-8")) < len(original.encode("utf-8"))


def without_note(body: str) -> str:
    """A compressed body without its closing note on where the full text is (what an agent's
    context needs is the content; the note is for a person reading the file)."""
    return _NOTE.sub("", body or "")


def is_note_line(line: str) -> bool:
    """Whether a line is a compressed body's note on where the full text is (wherever it stands)."""
    return _NOTE_LINE.fullmatch((line or "").strip()) is not None
