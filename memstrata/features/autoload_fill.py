"""Filling the autoload block: ranked memories put in while the whole block fits its budget."""
from __future__ import annotations

from typing import Callable, Iterable

from memstrata.features.autoload_block import (CHARS_PER_TOKEN, HIT_TOKENS, SECTIONS, TITLE_CHARS, AutoloadItem,
                                               AutoloadResult, Costs, cut_chars, promoted_line)
from memstrata.features.compression import without_note
from memstrata.storage.entry import Entry
from memstrata.storage.secrets import redact

MIN_BODY_TOKENS = 12  # below this a truncated body says nothing; skip the entry instead
MAX_MISSES = 25  # once this many items in a row did not fit, the budget is taken as full


def fill(result: AutoloadResult, ranked: Iterable[tuple], costs: Costs,
         resolve: Callable[[object, str, bool], Entry | None], whole: set | frozenset = frozenset(),
         turn_text: Callable[[Entry, int], str] | None = None) -> None:
    """Put the `ranked` memories, (item, section, score, from_shared) best first (an iterator is read
    only as far as the budget needs), into `result` while the whole block fits its budget: the
    preamble, each section's heading and the promoted line are counted with the fenced memories.
    `resolve(item, section, from_shared)` gives the entry to show (its file read now), or None to skip it.
    A relevant item whose id is in `whole` (promoted for this task), and a "brought" one (promoted by
    the session start for the project's last session), brings its whole text when it fits the budget
    left, not HIT_TOKENS of it. A relevant hit on a captured session's turn brings that turn
    and the turns beside it (`turn_text(entry, turn)`), not the session from its start."""
    frame = costs.head() + (costs.of(promoted_line(result.promoted)) if result.promoted else 0)
    frame += costs.frame(result)  # a JSON answer's own fields (MCP): 0 for the Markdown block
    headings = dict((section, costs.of(heading)) for section, heading in SECTIONS)
    used, seen, missed = frame, set(), 0  # missed: items in a row that did not fit
    for item, section, score, from_shared in ranked:
        ref = item.id if section == "relevant" else item.ref  # a hit's id is `path:...` already
        if ref in seen:
            continue
        seen.add(ref)
        opening = 0 if any(i.section == section for i in result.items) else headings[section]
        if result.budget - used - opening < MIN_BODY_TOKENS:  # as listed: no need to read it
            missed += 1
            if used >= result.budget or missed >= MAX_MISSES:
                break  # (nearly) full: the rest of a long list is not tried one by one
            continue
        try:
            entry = resolve(item, section, from_shared)
        except Exception:  # noqa: BLE001 - a file that vanished or broke since it was listed: skip it
            continue
        if entry is None or not entry.body.strip():  # an empty note: nothing to hand an agent
            continue
        # what autoload hands out is shown text, redacted as recall's snippets are (retrieval.hits):
        # a file the guard flagged (adopted, hand-made, pulled) reaches here through the hot list
        title, cut = cut_chars(redact(entry.title), TITLE_CHARS)
        entry = entry.copy(title=title + (" …" if cut else ""))
        relevance = getattr(item, "relevance", None) if section == "relevant" else None
        extra = costs.row(entry, section, relevance, from_shared, result.budget)  # its entry in a JSON answer
        header = costs.header(entry, from_shared) + extra
        # promoted for this task, or brought back by the session start for the project's last session
        entire = (section == "brought" or (section == "relevant" and item.id in whole)) and not from_shared
        room = min(result.budget - used - opening, header + (result.budget if entire else HIT_TOKENS))
        if room - header < MIN_BODY_TOKENS:
            missed += 1
            continue
        # before any cut, so a credential is never shortened past its rule into a visible prefix
        body = redact(without_note(entry.body).strip() or (entry.summary or ""))
        if section == "relevant" and turn_text is not None and getattr(item, "turn", None) is not None:
            body = redact(turn_text(entry, item.turn)) or body
        cap = room - header if entire else HIT_TOKENS
        part = section == "relevant" and costs.of(body[:(cap + 1) * CHARS_PER_TOKEN]) > cap
        if part:  # the part asked about; the note goes on (" …", and `mem read` has it all)
            from memstrata.retrieval.prompts import relevant_part

            body = relevant_part(body, result.context or "", getattr(item, "snippet", None))
        fitted = costs.fit(entry, body, from_shared, room, cut=part, extra=extra)
        if fitted is None:
            missed += 1
            continue
        missed = 0
        body, truncated, cost = fitted
        result.items.append(AutoloadItem(entry, section, score, body, cost, truncated, from_shared, relevance))
        used += cost + opening
    result.frame_tokens = frame + sum(headings[s] for s in {i.section for i in result.items})
