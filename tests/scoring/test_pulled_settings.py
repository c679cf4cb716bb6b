"""What a config.md pulled from another machine may change here: pure verdicts."""
from memstrata.scoring.pulled_settings import UNSET, held_back


def _held(ours, pulled, available=lambda name: name == "bundled"):
    return {k: v[0] for k, v in held_back(ours, pulled, available).items()}


def test_valid_changes_apply_and_invalid_ones_keep_this_machines_value():
    assert _held({}, {"hot_days": 5, "trash_retention_days": 60}) == {}
    assert _held({"max_entry_bytes": 1000}, {"max_entry_bytes": 100_000_000}) == {"max_entry_bytes": 1000}
    assert _held({}, {"hot_days": "soon"}) == {"hot_days": UNSET}


def test_the_secret_guard_can_be_strengthened_by_a_peer_never_weakened():
    assert _held({}, {"secrets": "warn"}) == {"secrets": UNSET}
    assert _held({"secrets": "refuse"}, {"secrets": "warn"}) == {"secrets": "refuse"}
    assert _held({"secrets": "warn"}, {}) == {}  # back to the default, refuse: applies
    assert _held({"secrets": "warn"}, {"secrets": "refuse"}) == {}


def test_a_model_this_machine_lacks_is_held_back():
    assert _held({}, {"embedding_model": "/nonexistent/model"}) == {"embedding_model": UNSET}
    assert _held({}, {"embedding_model": "/here"}, available=lambda name: True) == {}


def test_values_valid_alone_but_not_together_keep_ours():
    assert _held({"warm_days": 29}, {"warm_days": 3}) == {"warm_days": 29}  # hot_days 7 < warm_days 3 fails


def test_network_timeouts_are_each_machines_own():
    assert _held({}, {"git_timeout": 1}) == {"git_timeout": UNSET}
    assert _held({"git_idle_timeout": 30}, {"git_idle_timeout": 5}) == {"git_idle_timeout": 30}
    assert _held({"git_connect_timeout": 30}, {"git_connect_timeout": 30, "hot_days": 5}) == {}


def test_a_pull_raising_this_machines_own_lower_value_is_named_with_that_value():
    from memstrata.scoring.pulled_settings import raised_here

    assert raised_here({"forget_after_days": 0}, {}) == {"forget_after_days": 0}  # the echo: removed, default 180
    assert raised_here({"trash_retention_days": 7}, {"trash_retention_days": 30}) == {"trash_retention_days": 7}
    assert raised_here({"forget_after_days": 400}, {}) == {}  # lowered to the default: held_back's business
    assert raised_here({}, {"forget_after_days": 365}) == {}  # never set here: the pulled value applies
    assert raised_here({"forget_after_days": 0, "hot_days": 3}, {"forget_after_days": 0, "hot_days": 9}) == {}
