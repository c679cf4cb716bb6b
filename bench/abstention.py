"""Abstention benchmark: does recall say "nothing relevant" off topic and keep the evidence on topic?

    python bench/abstention.py --reuse DIR    # DIR: the trees bench/locomo.py --reuse DIR built

On topic: each LoCoMo question asked of its own conversation's tree. Off topic: each asked
of the next conversation's tree, and 60 everyday queries (weather, recipes, sports...)
asked of every tree. For each cut-off: the share of on-topic questions that keep an
evidence turn in their top 10 (of those that had one without the cut-off), the share of
off-topic queries that return nothing, and the tokens the prompt hook would inject per
prompt (the kept hits' bodies and headers, within autoload_budget).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # noqa: E402

EVERYDAY = """What's the weather in Paris tomorrow?
Will it rain this weekend?
How do I make a sourdough starter?
Best recipe for chicken curry
How long should I boil an egg?
Who won the football world cup in 2018?
What time does the NBA final start?
How many players are on a rugby team?
What is the capital of Australia?
How far is the moon from the earth?
Convert 30 degrees celsius to fahrenheit
What's the exchange rate from euro to yen?
How do I reset my router?
Recommend a good sci-fi movie
What is the population of Tokyo?
How do I change a flat tyre?
When is the next solar eclipse?
What's a good stretching routine for back pain?
How do you say thank you in Japanese?
What is the boiling point of water at altitude?
Translate good morning into Spanish
How many calories are in a banana?
What's the best way to store fresh basil?
Who wrote Pride and Prejudice?
How do I fix a leaking tap?
What are the rules of cricket?
Where can I buy cheap flights to Rome?
How do I clean a cast iron pan?
What is the tallest mountain in Africa?
How much sleep does an adult need?
What's the speed of light?
How do I unclog a drain?
Give me a vegan lasagna recipe
What are the symptoms of the flu?
Who is the current chess world champion?
How do I tie a bow tie?
What's the difference between a latte and a cappuccino?
How often should I water a cactus?
What's the score of the tennis match today?
How do I calculate compound interest?
What is the stock price of Apple?
How do I make pancakes without eggs?
Which planet has the most moons?
What time is sunset in London?
How do I remove a red wine stain?
What's the best tyre pressure for a road bike?
How tall is the Eiffel Tower?
What's the formula for the area of a circle?
How do I brew green tea properly?
Who painted the Mona Lisa?
hello
thanks!
ok sounds good
What's the traffic like on the highway?
How do I install Python on Windows?
What is the GDP of Germany?
How many ounces in a pound?
What's the offside rule in football?
How long does it take to fly to New York?
Any tips for growing tomatoes on a balcony?""".splitlines()

CUTS = [0.0, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1]


def main(argv=None):
    from memstrata import Memory

    reuse, convs = locomo.questions_of_built_trees(__doc__, argv)
    names = list(convs)
    on, off_conv, off_daily = [], [], []  # per query: [(relevance, is evidence, tokens)] of the top 10
    for i, name in enumerate(names):
        m = Memory(reuse / f"conv{name}")
        count = m._recall.state.model().count_tokens

        def hits(query, evidence=frozenset()):
            res = m.recall(query, k=10, min_relevance=0, count_access=False)
            return [(h.relevance, h.id in evidence, count(f"### {h.title}\n`{h.id}`\n{h.snippet}") + 12)
                    for h in res.results]

        on += [hits(q["query"], q["evidence"]) for q in convs[name]]
        off_conv += [hits(q["query"]) for q in convs[names[(i + 1) % len(names)]]]
        off_daily += [hits(q) for q in EVERYDAY]
        sys.stderr.write(f"conversation {name} done\n")
    had = [h for h in on if any(e for _, e, _ in h)]
    print(f"On-topic questions with an evidence turn in the top 10 without a cut-off: {len(had)} of {len(on)}.\n")
    print("| cut-off | on-topic: evidence kept | off-topic (other conversation): nothing returned "
          "| off-topic (everyday, x5 trees): nothing returned | tokens per prompt on / off topic |")
    print("| --- | --- | --- | --- | --- |")
    from memstrata.scoring.relevance import keep

    relative = Memory(reuse / f"conv{names[0]}").settings.recall_relative_relevance
    print(f"(a hit is also dropped below {relative:g} x the best hit's relevance: recall_relative_relevance)\n")

    def shown(h, cut):  # the hits recall returns at this cut-off
        kept = keep([r for r, _, _ in h], cut, relative) if h else []
        return [h[i] for i in kept]

    for cut in CUTS:
        kept = sum(1 for h in had if any(e for _, e, _ in shown(h, cut))) / len(had)
        none_c = sum(1 for h in off_conv if not shown(h, cut)) / len(off_conv)
        none_d = sum(1 for h in off_daily if not shown(h, cut)) / len(off_daily)
        tok = lambda qs: sum(min(2000, sum(t for _, _, t in shown(h, cut))) for h in qs) / len(qs)  # noqa: E731
        print(f"| {cut:.3f} | {kept:.3f} | {none_c:.3f} | {none_d:.3f} | {tok(on):.0f} / {tok(off_conv + off_daily):.0f} |")

if __name__ == "__main__":
    main()
