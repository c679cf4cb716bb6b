"""Fixtures of the retrieval tests: an initialised tree on the shared real model, and a ranker feature read on an adopted vault."""
import pytest

from memstrata import Memory


@pytest.fixture()
def mem(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    return m


@pytest.fixture()
def ranker_feature(embedder):
    """`read(vault, query, feature)`: adopt `vault`, search `query` and give the ranker's `feature`
    of each note, by path (None: the note was not a candidate)."""
    def read(vault, query: str, feature: str) -> dict:
        from memstrata.retrieval import fusion
        from memstrata.retrieval.search import Filters, search
        from memstrata.scoring.ranker import FEATURES

        m = Memory(vault, embedder=embedder)
        m.init(adopt=True)
        m.recall("warm up", count_access=False)
        state = m._recall.state
        index = state.vector_index()
        sig: dict = {}
        search(index, embedder, query, 10, Filters(), "hybrid", fusion.FusionWeights.from_settings(state.settings),
               state.settings, _signals_out=sig)
        frame = index.frame()
        by_pos = dict(zip(sig["candidates"].tolist(), sig["features"][:, FEATURES.index(feature)]))
        return {path: by_pos.get(pos) for path, pos in frame.by_path.items()}
    return read
