"""A worker of the doctor's credential scan (doctor/secret_pool.py): a batch of records per line in, the keys of those holding anything out."""
from __future__ import annotations

import json
import os
import sys

from memstrata.doctor.secret_pool import dirty_keys


def main() -> None:
    from memstrata.doctor import secret_pool
    from memstrata.storage import secrets

    # the doctor named the files of its own scan: another memstrata on the path answers nothing (the doctor scans)
    if [os.path.realpath(m.__file__) for m in (secret_pool, secrets)] != sys.argv[1:3]:
        sys.exit(3)
    answers = sys.stdout.buffer
    for line in sys.stdin.buffer:
        batch = json.loads(line.decode("utf-8", "surrogatepass"))
        answers.write(json.dumps(dirty_keys(batch)).encode("ascii") + b"\n")
        answers.flush()


if __name__ == "__main__":
    main()
