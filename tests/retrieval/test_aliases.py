"""A note's frontmatter aliases are other titles: recall finds the note by any of them."""
from __future__ import annotations


def test_aliases_are_read_from_a_list_a_comma_string_or_the_old_key():
    from memstrata.retrieval.names import aliases
    from memstrata.storage.entry import Entry

    def entry(**extra):
        return Entry(id="", title="Dynamic Host Configuration Protocol", body="Gives out addresses.", extra=extra)

    assert aliases(entry(aliases=["DHCP", "Dynamic IP", None, "  ", "DHCP"])) == ["DHCP", "Dynamic IP"]
    assert aliases(entry(aliases="DHCP, Dynamic IP")) == ["DHCP", "Dynamic IP"]
    assert aliases(entry(alias="DHCP")) == ["DHCP"]
    assert aliases(entry(aliases=["dynamic host configuration protocol"])) == []  # the title itself
    assert aliases(entry(aliases=None)) == [] and aliases(entry()) == []


def test_the_indexed_text_holds_the_aliases_under_the_title_and_the_note_is_unchanged():
    from memstrata.retrieval.chunking import content_hash, entry_text
    from memstrata.retrieval.names import aliases_in, with_aliases
    from memstrata.storage.entry import Entry

    note = Entry(id="", title="Media Access Control Address", body="A unique identifier of a network interface.",
                 extra={"aliases": ["MAC Address", "Burned In Address"]})
    indexed = with_aliases(note)
    text = entry_text(indexed.title, indexed.body)
    assert text.startswith("Media Access Control Address\naliases: MAC Address, Burned In Address\nA unique")
    assert aliases_in(text) == ["MAC Address", "Burned In Address"]
    assert note.body == "A unique identifier of a network interface." and indexed.title == note.title
    plain = Entry(id="", title="Hub", body="Repeats every frame to every port.")
    assert with_aliases(plain) is plain  # a note without aliases is indexed exactly as before
    assert content_hash(plain.title, plain.body) == content_hash(*(lambda e: (e.title, e.body))(with_aliases(plain)))
    assert aliases_in("Hub\nRepeats every frame.\naliases: not a title line") == []
    from memstrata.retrieval.names import without_names

    assert without_names(text) == "Media Access Control Address\nA unique identifier of a network interface."
    assert without_names("Hub\nRepeats every frame.") == "Hub\nRepeats every frame."


def test_the_title_feature_reads_the_aliases():
    from memstrata.retrieval.rerank import title_share

    class Stats:
        def idf(self, stem):
            return 1.0

    assert title_share(Stats(), ["levain"], "Sourdough starter", "baking/Sourdough starter.md") == 0.0
    assert title_share(Stats(), ["levain"], "Sourdough starter", "baking/Sourdough starter.md", ["Levain"]) == 1.0


def _vault(tmp_path):
    vault = tmp_path / "vault"
    (vault / "kitchen").mkdir(parents=True)
    notes = {
        # the note is named Herman only in its frontmatter; its text never says the name
        "Sourdough starter.md": "---\naliases:\n  - Herman\n  - Levain\ntags:\n  - homestead\n---\n"
                                "Flour and water left to ferment; feed it every morning and keep it in a jar "
                                "on the counter, in the fridge when you go away.\n",
        "Bread oven.md": "---\ntags: [baking]\n---\nPreheat the stone for an hour at the highest setting, then "
                         "bake with steam for the first twenty minutes.\n",
        "Pizza dough.md": "Three hundred grams of flour, two hundred of water, salt and a pinch of yeast; "
                          "rest it overnight in the fridge.\n",
        "Knife care.md": "Hone before each use, sharpen twice a year on a whetstone, never in the dishwasher.\n",
        "Coffee.md": "Grind just before brewing; fifteen grams for a cup, water just off the boil.\n",
        "Shopping list.md": "Eggs, butter, lemons, rice and dish soap for the week.\n",
    }
    for name, text in notes.items():
        (vault / "kitchen" / name).write_text(text)
    return vault


def test_a_question_naming_a_note_only_by_its_alias_finds_it(tmp_path, embedder):
    # Real tree, real model: "Herman" is in no note's text, only in the starter's `aliases:`. The
    # note comes first and clears the default relevance cut-off (before aliases were indexed it was
    # found by chance or not at all, and never judged relevant).
    from memstrata import Memory

    m = Memory(_vault(tmp_path), embedder=embedder)
    m.init(adopt=True)
    # the index holds the aliases as sync and the doctor compute them: nothing to redo, nothing stale
    assert m.sync()["embedded"] == 0 and m.doctor().findings == []
    for question in ("Herman", "when do I feed Herman?"):
        hits = m.recall(question, k=3, count_access=False).results
        assert hits and hits[0].path == "kitchen/Sourdough starter.md", (question, [h.path for h in hits])
        assert hits[0].title == "Sourdough starter"  # the title shown stays the note's own
        assert "aliases:" not in hits[0].snippet  # and the snippet is a sentence of the note


def test_a_frontmatter_tag_is_a_word_of_the_note_for_full_text_search(tmp_path, embedder):
    # Tags were already words of the indexed text (lexical.en_text); kept so here beside the aliases.
    from memstrata import Memory

    m = Memory(_vault(tmp_path), embedder=embedder)
    m.init(adopt=True)
    hits = m.recall("homestead", k=3, count_access=False, strategy="text").results
    assert hits and hits[0].path == "kitchen/Sourdough starter.md"


def test_related_entries_are_links_of_the_indexed_text():
    from memstrata.retrieval.chunking import entry_text
    from memstrata.retrieval.names import aliases_in, with_aliases
    from memstrata.retrieval.rerank import link_targets
    from memstrata.storage.codec import parse

    # quoted wikilinks, YAML's list of lists of an unquoted [[Note]], a plain name and an engine id
    note = parse('---\naliases: [Levain]\nrelated:\n  - "[[Bread oven|oven]]"\n  - [[Pizza dough]]\n'
                 '  - kitchen/Coffee\n  - 3f2a9c01b7de\n---\nFlour and water.\n',
                 path="kitchen/Sourdough starter.md", category="kitchen", fallback_title="Sourdough starter")
    text = entry_text(*(lambda e: (e.title, e.body))(with_aliases(note)))
    assert link_targets(text) == {"bread oven", "pizza dough", "coffee", "3f2a9c01b7de"}
    assert aliases_in(text) == ["Levain"]
    assert note.body == "Flour and water.\n"


def test_a_note_related_from_a_strong_hit_gets_its_relevance_as_its_link_feature(tmp_path, ranker_feature):
    # The link feature (weight 0 today) sees `related:` as it sees [[wikilinks]] in the text.
    vault = _vault(tmp_path)
    (vault / "kitchen" / "Sourdough starter.md").write_text(
        "---\nrelated:\n  - \"[[Bread oven]]\"\n---\nFlour and water left to ferment; feed it every morning "
        "and keep it in a jar on the counter.\n")
    link = ranker_feature(vault, "how do I feed a sourdough starter", "link")
    assert link["kitchen/Bread oven.md"] > 0.3  # the starter, the best hit, names it
    assert link["kitchen/Coffee.md"] == 0.0
