"""A worker of the doctor's credential scan (doctor/secret_pool.py): a batch of records per line in, the keys of those holding anything out."""
from __future__ import annotations

import json
import sys

from memstrata.doctor.secret_pool import dirty_keys


def main() -> None:
    answers = sys.stdout.buffer
    for line in sys.stdin.buffer:
        batch = json.loads(line.decode("utf-8", "surrogatepass"))
        answers.write(json.dumps(dirty_keys(batch)).encode("ascii") + b"\n")
        answers.flush()


if __name__ == "__main__":
    main()
