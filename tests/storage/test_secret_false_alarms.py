"""The false alarms of simonw/til (37 of 578 notes refused, 33 of them no credential) stay quiet; keys
beside the same shapes are still found.

Each line below is as the note has it (the credential-looking parts that are no credential: git SHAs,
UUIDs in paths, pip cache paths, request and response ids, default passwords on local hosts, values
that say they are insecure or variables). Real-looking keys are assembled at run time from seeded random
characters, so this file holds nothing a scanner would flag.
"""
from __future__ import annotations

import random
import string

import pytest

from memstrata.storage.secrets import scan

_rng = random.Random(2718)
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"


def rnd(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


QUIET = [
    # jq/git-log-json.md:51: a commit hash with the author's name run into it
    "    3feed1f66e2b746f349ee56970a62246a18bb164Simon Willison <...@gmail.com>Wed Mar 22 ",
    # macos/find-largest-sqlite.md:12, python/pyproject.md:71, python/rye.md:143: UUIDs and hashes in paths
    "301924352 /Users/simon/Library/Reminders/Container_v1/Stores/Data-A8BA15F3-C80E-43B3-9E21-F7D1CD42AB6A.sqlite",
    "  Stored in directory: /private/var/folders/x6/31xf1vxj0nn9mxqq8z0mmcfw0000gn/T/pip-ephem-wheel-cache-jh0fk5iu"
    "/wheels/a8/98/44/74568efecc0982a4601580062159e9b5c989ed6f0a697e5c9b",
    "LD_PRELOAD=/tmp/SQLite-cf538e27/.libs/libsqlite3.so python3 -c ",
    "export RS=0682fdbd40cc444cbe1e93d136e2b174",
    "      --build-arg DATASETTE_REF=c617e1769ea27e045b0f2907ef49a9a1244e577d",
    # file and model names
    "pip install flash_attn-2.6.3+cu123torch2.4cxx11abiFALSE-cp310-cp310-linux_x86_64.whl",
    "mlc_chat_cli --local-id RedPajama-INCITE-Chat-3B-v1-q4f16_0",
    "ARG DOWNLOAD_FILENAME=redbean-original-2.0.8.com",
    # ids labelled as ids, digests labelled as digests
    '  "id": "chatcmpl-7aYZDy1mAkW578SREa2say4gORGoq",',
    'data: {"id":"chatcmpl-8lLGDDIjeBjBNEzYeoq4ibZX8jz9F","object":"chat.completion.chunk"}',
    '   "client_id": "cTQfcJy9EhlIUSGPRx90PRnMx_RroBuLUw8WcMvguD0",',
    "So the URL for a folder with ID `1E6Zg2X2bjjtPzVfX8YqdXZDCoB3AVA7i` ends up like this:",
    "S3 Extended Request ID: 0LSAhwbo21RaZ+8/FOgKf1oh+dIkV0WO8DvtYmwQdBzddfILchiSyamFLenD8IOmrN+lDPxKTFP/7my0D",
    "x-amz-id-2: LpMSRQox/dMz/qS2p2jb6OmP7/YsEa4YZnOfEVgB5biGOPynNxqs8eY5EgWW0xzbclBnOI6LTAQ=",
    '    "CodeSha256": "Y1nCZLN6KvU9vUmhHAgcAkYfvgu6uBhmdGVprq8c97Y=",',
    '"url":"https:\\/\\/a.nel.cloudflare.com\\/report\\/v4?s=xu4hL1Hr5W2ZDo6VSCd4NBfPp2tmCYiTNbct64mFfU6AAkBofX%2BH"',
    # a Fernet token is ciphertext
    "# b'gAAAAABlY7AZ-OuJAEv1J4KufF8vpreyehPeejdPqluXwD0G_mfFg-Zl1AvEza6F2DXbWMEkIcKc4B0Hb'",
    # default passwords on local hosts
    "    postgres://postgres:postgres@127.0.0.1:5432/test",
    "      DATABASE_URL: postgres://postgres:postgres@database:5432/mydb",
    '          -e DATABASE_URL="postgres://postgres:postgres@172.17.0.1:5432/postgres" \\',
    '    docker run --env DATABASE_URL="postgres://docker:docker-password@host.docker.internal:5432/x" ',
    "postgres://dashboardrole:RANDOM_PASSWORD@my-app-postgresql.internal/appdatabase",
    # values that say what they are, variables
    'SECRET_KEY = "django-insecure-test-key"',
    "   CSC_KEY_PASSWORD=key-password \\",
    "          client_secret: clientSecret,",
    "  client = vision.ImageAnnotatorClient(credentials=credentials)",
    "- `-user:simonw` filters out everything from my own repos",
]


@pytest.mark.parametrize("text", QUIET, ids=range(len(QUIET)))
def test_til_false_alarms_are_quiet(text):
    assert scan(text) == [], text


def test_keys_beside_the_same_shapes_are_found():
    found = [
        "postgres://postgres:" + rnd(ALNUM, 12) + "@db.example.com:5432/x",   # a public host
        "postgres://postgres:postgres@db.example.com/x",                       # a default, but not local
        "postgres://app:" + rnd(ALNUM, 12) + "@127.0.0.1/x",                  # local, not a default
        'SECRET_KEY = "django-insecure-' + rnd(ALNUM + "!@#$%^&*", 50) + '"',  # Django's real generated key
        "client_secret: " + rnd(ALNUM, 24),
        "credentials=" + rnd(ALNUM, 16),
        '  "session_id": "' + rnd(ALNUM, 40) + '"',                            # a session id is a credential
        "curl -u admin:" + rnd(ALNUM, 12) + " https://api.example.com",
    ]
    for text in found:
        assert scan(text), text


@pytest.mark.parametrize("host", ["production", "prod", "staging", "billing", "test", "10.0.0.5",
                                  "192.168.1.20", "nas.local", "prod-db"])
def test_a_default_password_on_a_host_that_is_not_this_machine_is_found(host):
    """Only this machine's own hosts and Compose services named for what they are pass a default password:
    any one-label name did (`postgres://admin:admin@production/app` passed)."""
    assert scan(f"postgres://admin:admin@{host}/app"), host


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "0.0.0.0", "172.17.0.1",
                                  "host.docker.internal", "db", "database", "postgres", "mysql", "mariadb",
                                  "redis", "mongodb", "rabbitmq", "postgres-db", "db_1", "test-db"])
def test_a_default_password_on_this_machine_or_a_named_service_is_quiet(host):
    assert scan(f"postgres://postgres:postgres@{host}:5432/app") == [], host


def test_random_keys_in_the_new_contexts_are_found_as_bare_ones_are():
    """2,000 random base64 keys of 40 characters: every one found bare is also found after `NAME=`, after
    a hash and after a label that is no id; at the end of a path, all but a few (a key's own `/` can cut
    a short piece off it: 31 in 20,000 measured; the rule before missed 311, reading the path as part of it)."""
    contexts = ["export MY_THING={}", "3feed1f66e2b746f349ee56970a62246a18bb164/{}", '"secret": "{}"',
                '"session_id": "{}"', "the value {} here"]
    missed, in_paths = [], 0
    for _ in range(2000):
        key = rnd(B64, 40)
        if scan("the value " + key):
            missed += [c.format(key) for c in contexts if not scan(c.format(key))]
            in_paths += not scan("see /Users/simon/Library/" + key)
    assert missed == [] and in_paths <= 10
