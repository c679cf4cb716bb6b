"""recall's final cut: the k best entries without sorting every entry, exactly as a stable full sort."""
import numpy as np

from memstrata.retrieval.search import top_k


def test_top_k_equals_a_stable_full_sort():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        n = int(rng.integers(1, 60))
        score = rng.integers(0, 5, n).astype(float)  # many ties: they keep the order of positions
        score[rng.random(n) < 0.3] = -np.inf          # entries the filters refuse
        k = int(rng.integers(0, 70))
        assert top_k(score, k).tolist() == np.argsort(-score, kind="stable")[:k].tolist()
