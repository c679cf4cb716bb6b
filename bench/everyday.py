"""Everyday prompts (greetings, thanks, "ok", "continue", small talk; English and Chinese) for the cut-off benchmarks.

FIT is what bench/fit_relevance.py fits on and what the vocabulary of retrieval.prompts was
extended from; HELD_OUT is never fitted on or read while choosing a setting: it only measures.
HELD_OUT was written after a first look at FIT's results (the list was first split in halves and
both halves' gate results were printed once; that look made the first list FIT whole, and this
second list was written before anything ran on it), so it holds every kind again.
"""
from __future__ import annotations

from memstrata.retrieval.prompts import EVERYDAY as PROMPTS  # the engine's list (retrieval/prompts.py)

HELD_OUT = """hiya
morning!
thx
many thanks
ty, appreciate it
alright
k
cool
yep, do it
sounds great
carry on
proceed
go for it
next one please
wow
oops
well done
brilliant, thanks a lot
how's your day going?
long day today
good night
talk to you later
take care
you're welcome
大家好
多谢
可以
行，继续吧""".splitlines()

FIT = PROMPTS
