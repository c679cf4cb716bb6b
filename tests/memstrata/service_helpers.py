"""What the service tests share: a service's status, waiting for a condition a real service process reaches."""
from __future__ import annotations

import time


def wait_for(predicate, timeout=120.0, step=0.1):
    """The first truthy value of `predicate()` within `timeout` seconds (else its last value)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def status(folder):
    """The status of the service whose runtime folder is `folder`, or None when none answers."""
    from memstrata.service import client

    return client.request({"op": "status"}, timeout=5, folder=str(folder))
