"""Share-link parameters are no credentials, and a match held back as a possible credential is said.

A newsletter archive's notes link WeChat posts (`&sn=<hex>&token=916043564`) and SoundCloud tracks
(`?secret_token=s-...`): those notes were flagged and dropped out of recall without a word. Now the
links pass the guard, and a note that is held back (a real credential in a hand-made file) is named
in the recall result when the query matches it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memstrata import Memory
from memstrata.storage import secrets

WECHAT = ("https://mp.weixin.qq.com/s?__biz=Mzg5NjAzMjI0NQ==&mid=2247503774&idx=1&sn=08aa0787b6bcabcda9962dfe22016404"
          "&chksm=c005c304f7724a124c43c4000eb7eeba3994243ccfb43e001aa964279567f84ac5ccab2393ec&token=916043564"
          "&lang=zh_CN#rd")
SOUNDCLOUD = ('<iframe src="https://w.soundcloud.com/player/?url=https://api.soundcloud.com/tracks/802871497?'
              'secret_token=s-5bu1A48An4g&amp;auto_play=false"></iframe>')
SHARE = "[报告](https://example.feishu.cn/docx/AbCdEf?token=8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c)"


@pytest.mark.parametrize("link", [WECHAT, SOUNDCLOUD, SHARE])
def test_share_link_parameters_are_no_credential(link):
    assert secrets.scan(f"本期封面故事见 {link} 。") == []


@pytest.mark.parametrize("text", [
    "https://api.example.com/v1/data?access_token=r4nd0mStr1ngWithD1g1ts99",
    "https://api.example.com/v1/data?password=hunter2xy",
    "https://api.example.com/v1/data?api_key=8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c",
    "https://example.com/?token=ghp_Zq8Lm3Rt7Vw2Kp9Xy4Nb6Hj1Fd5Gs0Ac8Ue3",  # a key of a known format, anywhere
    "token=8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c",  # not in a link
    "secret_token: r4nd0mStr1ngWithD1g1ts",
])
def test_credentials_in_other_parameters_and_outside_links_are_still_found(text):
    assert secrets.scan(text)


def note(title, body):
    return f"---\ntitle: {title}\n---\n\n{body}\n"


def test_notes_with_share_links_are_found_and_a_held_back_match_is_said(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    folder = m.root / "weekly"
    folder.mkdir()
    (folder / "issue-101.md").write_text(note("Issue 101", "本期封面：印度的 iPhone 代工厂。工人抗议拖欠工资，"
                                              f"原文 {WECHAT}"))
    (folder / "issue-102.md").write_text(note("Issue 102", f"Podcast of the week: the history of the modem. {SOUNDCLOUD}"))
    (folder / "deploy.md").write_text(note("Deploy notes", "The zq0007x release runbook. "
                                           "export DB_PASSWORD=Xk9mPq2vL7wQz8Rt before running it."))
    synced = m.sync()
    assert set(synced.get("flagged", {})) == {"weekly/deploy.md"}
    hit = m.recall("iPhone 代工厂 工人 抗议", count_access=False, min_relevance=0)
    assert hit.results and hit.results[0].path == "weekly/issue-101.md"
    assert m.recall("history of the modem podcast", count_access=False).results[0].path == "weekly/issue-102.md"
    held = m.recall("zq0007x release runbook", count_access=False)
    assert "weekly/deploy.md" not in [h.path for h in held.results]
    assert held.held_back == ["weekly/deploy.md"]
    assert any("held back 1 matching note" in n and "weekly/deploy.md" in n for n in held.notes)
    assert m.recall("iPhone 代工厂", count_access=False).held_back == []  # only a match is said
    out = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "recall", "zq0007x release runbook", "--json",
                          "--no-touch", "--root", str(m.root)], capture_output=True, text=True,
                         env={**os.environ, "MEMSTRATA_SERVICE": "off"})
    data = json.loads(out.stdout)
    assert data["held_back"] == ["weekly/deploy.md"] and "Xk9mPq2vL7wQz8Rt" not in out.stdout
    m.reindex()  # a rebuild keeps the list
    assert m.recall("zq0007x release runbook", count_access=False).held_back == ["weekly/deploy.md"]
    (folder / "deploy.md").write_text(note("Deploy notes", "The zq0007x release runbook: the password is in the vault."))
    m.sync()
    found = m.recall("zq0007x release runbook", count_access=False)
    assert found.held_back == [] and found.results[0].path == "weekly/deploy.md"
