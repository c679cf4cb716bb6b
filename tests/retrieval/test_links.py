"""The ranker's `link` feature: a note linked from the other candidates of a query (a vault's graph)."""
from __future__ import annotations

import pytest


def test_link_targets_reads_wikilinks_and_links_to_note_files():
    from memstrata.retrieval.rerank import link_targets

    text = ("See [[Deadlock Conditions]], [[Tags/Operating Systems|OS]] and [[Python Generators#send]].\n"
            "![[Pasted image 2024.png]] [the ownership chapter](ch04-01-what-is-ownership.html#moves), "
            "[undo](../git/Undo%20a%20commit.md), [site](https://example.com/page) and [[ ]].")
    assert link_targets(text) == {"deadlock conditions", "operating systems", "python generators",
                                  "pasted image 2024.png", "ch04-01-what-is-ownership", "undo a commit"}
    assert link_targets("no links here [x](https://example.com)") == set()


def test_a_note_linked_from_the_strong_hits_gets_their_relevance_as_its_link_feature(tmp_path, ranker_feature):
    # The book the deadlock notes cite says little about deadlocks itself; the two deadlock notes
    # link it, so its `link` is their relevance. A note nobody links gets 0, and so does a note
    # linked only from a note the query does not bring up as strongly (the linker's relevance counts).
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "books").mkdir()
    (vault / "notes" / "Deadlock Conditions.md").write_text(
        "Tags:\n- [[Operating Systems]]\n---\nFour conditions must all hold for a deadlock: mutual exclusion, "
        "hold and wait, no preemption and circular wait.\n\n## References\n- [[OSTEP]]\n")
    (vault / "notes" / "Deadlock Prevention.md").write_text(
        "Make sure one of the deadlock conditions cannot hold: acquire every lock at once, or order the "
        "locks.\n\nSee [[Deadlock Conditions]]. From [[books/OSTEP|the OS book]].\n")
    (vault / "books" / "OSTEP.md").write_text(
        "## Chapter 7: Scheduling\n- multi-level feedback queue\n\n## Chapter 13: Address spaces\n"
        "- every process gets the illusion of its own memory\n")
    (vault / "notes" / "Sourdough.md").write_text("Feed the starter the night before; bake at 250 degrees "
                                                  "for twenty minutes with steam. See [[Pizza]].\n")
    (vault / "notes" / "Pizza.md").write_text("A hot stone and a thin dough: three minutes in a very hot oven.\n")
    link = ranker_feature(vault, "what causes a deadlock", "link")
    book, conditions = link["books/OSTEP.md"], link["notes/Deadlock Conditions.md"]
    assert book is not None and book > 0.3  # linked from both deadlock notes
    assert conditions is not None and conditions > 0.3  # linked from Deadlock Prevention
    assert link["notes/Deadlock Prevention.md"] == 0.0  # no candidate links to it
    assert link["notes/Pizza.md"] is None or link["notes/Pizza.md"] < book / 3  # its linker is no match


def test_chat_turns_have_no_link_feature(tmp_path, embedder):
    from memstrata.retrieval.rerank import candidate_links

    class Frame:
        ids = ["0a1b2c3d4e5f", "6a7b8c9d0e1f"]
        cols = {"path": ["chat/a.md", "chat/b.md"], "title": ["Turn one", "Turn two"]}

    pairs = candidate_links([0, 1], ["Caroline: I went to the support group [yesterday].", "Melanie: Turn one?"],
                            Frame())
    assert pairs.shape == (0, 2)
    # a link by title or file stem, either way, never to itself
    Frame.cols = {"path": ["x/Alpha.md", "x/beta.md"], "title": ["Alpha", "Beta note"]}
    got = candidate_links([0, 1], ["[[Alpha]] [[beta]]", "[[Alpha]] and [[Beta note]]"], Frame())
    assert sorted(map(tuple, got.tolist())) == [(0, 1), (1, 0)]
    # and by id (a `related:` entry naming the engine's id: retrieval.names)
    got = candidate_links([0, 1], ["related: [[6a7b8c9d0e1f]]", "no link"], Frame())
    assert sorted(map(tuple, got.tolist())) == [(0, 1)]


def test_the_link_feature_has_no_weight_until_a_fit_keeps_it():
    # docs/recall.md: on the current weights it costs vault MRR from a weight of 0.1 on, and no
    # held-out fit can weigh it (only one corpus has wikilinks)
    from memstrata.scoring.ranker import NOTES_WEIGHTS, WEIGHTS

    assert WEIGHTS.get("link", 0.0) == 0.0 and NOTES_WEIGHTS.get("link", 0.0) == 0.0
