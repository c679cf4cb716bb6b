"""Categories that try to leave the root are refused; slugs keep CJK and never hold separators."""
import pytest

from memstrata.errors import InvalidInput
from memstrata.storage.paths import category_of, slugify, validate_category


@pytest.mark.parametrize("bad", ["../etc", "a/../../b", "/etc", "~/x", ".trash", "a/.hidden", "a/archived",
                                 "a//b", "a\\b", "C:\\x", "a\x00b", "x" * 81])
def test_bad_categories_are_refused(bad):
    with pytest.raises(InvalidInput):
        validate_category(bad)


def test_good_categories_are_normalised():
    assert validate_category("projects/web/") == "projects/web"
    assert validate_category(" 项目/前端 ") == "项目/前端"
    assert validate_category(None) == "general"


def test_slugs():
    assert slugify("Alpha项目") == "alpha项目"
    assert slugify("a/b\\c..d") == "a-b-c-d"
    assert slugify("!!!???") == "entry"
    assert slugify("") == "entry"
    long = slugify("长" * 500)
    assert len(long.encode()) <= 120 and "/" not in long


def test_category_of_archived_files():
    assert category_of("a/b/archived/x.md") == "a/b"
    assert category_of("a/b/x.md") == "a/b"


def test_category_depth_and_length_are_limited_at_once():
    import time

    from memstrata.storage.paths import MAX_CATEGORY_BYTES, MAX_CATEGORY_DEPTH

    started = time.monotonic()
    with pytest.raises(InvalidInput, match=r"2000 levels; at most"):
        validate_category("/".join(["a"] * 2000))
    with pytest.raises(InvalidInput, match=r"bytes long; at most"):
        validate_category("/".join(["x" * 80] * 20))  # 20 levels, each fine, 1,619 bytes
    assert time.monotonic() - started < 1
    assert validate_category("/".join(["a"] * MAX_CATEGORY_DEPTH)).count("/") == MAX_CATEGORY_DEPTH - 1
    assert len(validate_category("/".join(["y" * 63] * 16))) <= MAX_CATEGORY_BYTES
