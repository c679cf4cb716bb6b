"""Everyday prompts (greetings, thanks, "ok", "continue", small talk; English and Chinese) for the cut-off benchmarks.

FIT is what bench/fit_relevance.py fits on and what the vocabulary of retrieval.prompts was
extended from; HELD_OUT is never fitted on or read while choosing a setting: it only measures.
HELD_OUT was written after a first look at FIT's results (the list was first split in halves and
both halves' gate results were printed once; that look made the first list FIT whole, and this
second list was written before anything ran on it), so it holds every kind again.
"""
from __future__ import annotations

PROMPTS = """hello
hi there
hey!
good morning
good evening :)
thanks!
thank you so much
thanks, that helps
cheers mate
ok
okay
ok sounds good
got it
sure, go ahead
yes please
no thanks
continue
please continue
keep going
go on
next
lol
haha nice
awesome, great job
perfect
how are you?
how's it going?
what's up?
how was your weekend?
nice weather today
have a good day
see you tomorrow
bye
I'm back
sorry, my bad
never mind
hmm, let me think
that makes sense
你好
您好！
谢谢
非常感谢！
好的
好的，继续
继续
嗯嗯
收到
没问题
早上好
哈哈哈
辛苦了
再见
你今天怎么样？
周末过得好吗？
明白了，谢谢
不用了""".splitlines()

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
