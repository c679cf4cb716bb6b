"""How much text a query and a prompt may bring: a recall query past a cap is refused, a long prompt is cut."""
from __future__ import annotations

from memstrata.storage.errors import InvalidInput

# A recall query (CLI, MCP, --queries) longer than this is a pasted document, not a question:
# refused, in one line. Searching megabytes cost tens of seconds and gigabytes of memory.
QUERY_MAX_CHARS = 16_384
# Of a longer autoload context (a prompt with a pasted log), the first and the last this many
# characters are used: the question is usually at one end. The hook cuts the same way.
PROMPT_END_CHARS = 4_096


def checked_query(query) -> str:
    """`query` as text when it is at most QUERY_MAX_CHARS long, else InvalidInput saying so."""
    text = str(query or "")
    if len(text) > QUERY_MAX_CHARS:
        raise InvalidInput(f"the query is {len(text):,} characters long; at most {QUERY_MAX_CHARS:,} "
                           "(ask a question or give a few lines, not a whole document)")
    return text


def cut_prompt(context):
    """(context, note): a context longer than twice PROMPT_END_CHARS cut to its first and last
    PROMPT_END_CHARS characters, with a note saying so; None or a short one as it is, note None."""
    if not isinstance(context, str) or len(context) <= 2 * PROMPT_END_CHARS:
        return context, None
    note = (f"the context was {len(context):,} characters long: its first and last "
            f"{PROMPT_END_CHARS:,} were used")
    return context[:PROMPT_END_CHARS] + "\n…\n" + context[-PROMPT_END_CHARS:], note
