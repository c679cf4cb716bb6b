"""What a compressed entry's body keeps at each layer: key points, one line and tags, a paragraph."""
from __future__ import annotations

import re

from memstrata.storage.entry import Entry

_NOTE = re.compile(r"\s*_\[L[1-4]: [^\]\n]*\] Full text in `[^`\n]*`: `mem decompress [^`\n]*` prints it, "
                   r"`--restore` brings it back\._\s*$")

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

    note = (f"_[{layer}: {LAYER_LABELS.get(layer, 'compressed')}] Full text in `{rel}`: "
            f"`mem decompress {entry.id} --show` prints it, `--restore` brings it back._")
    tags = f"Tags: {', '.join(entry.tags)}" if entry.tags else ""
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


def without_note(body: str) -> str:
    """A compressed body without its closing note on where the full text is (what an agent's
    context needs is the content; the note is for a person reading the file)."""
    return _NOTE.sub("", body or "")
