"""Stemming is safe from many threads at once (the warm service answers recalls in threads)."""
import random
import string
import threading

from memstrata.retrieval import stemming


def test_concurrent_stems_equal_the_stems_of_one_thread():
    rng = random.Random(7)
    suffixes = ("ing", "ed", "ation", "ness", "ies", "ly", "ment", "izing", "s", "ful")
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 12))) + rng.choice(suffixes)
             for _ in range(6000)]
    stemming.stem.cache_clear()
    results: dict[int, list] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(n):
        try:
            start.wait()
            results[n] = [stemming.stem(w) for w in words[n::8]]
        except BaseException as exc:  # an IndexError/AssertionError inside Snowball is the failure
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stemming.stem.cache_clear()
    for n in range(8):
        assert results[n] == [stemming.stem(w) for w in words[n::8]], n
