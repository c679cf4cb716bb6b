"""Extractive summaries: sentence splitting, key points, one sentence, a paragraph."""
from __future__ import annotations

from memstrata.models.summarize import key_points, one_sentence, paragraph, split_sentences

EN = """# Billing migration

The team decided to migrate the billing service from MySQL to Postgres in March.
Dr. Smith approved the budget for new database servers, e.g. two replicas.
The migration is expected to take
three weeks and will run in parallel with the old billing system.
We will review migration progress every Friday!
Did anyone verify the database backups?
Backups of the billing database are verified nightly by a cron job.
The old MySQL cluster will be shut down after the Postgres migration is complete.
Lunch was pizza.

- Risk: billing data loss during the database cutover.
- Owner: Alice, with help
  from Bob.

```python
total = 1. + 2.
print("a. b! c?")
```
"""

ZH = """# 计费系统迁移

我们决定在三月把计费服务从 MySQL 迁移到 Postgres。迁移预计需要三周！
旧的计费系统会并行运行吗？会的，旧系统会并行运行一个月。
计费数据库的备份每天晚上自动验证。
午饭吃了饺子。
旧的 MySQL 集群在迁移完成后关闭。迁移完成后，计费服务的性能预计提升一倍。
- 风险：切换数据库时可能丢失计费数据。
"""


def test_split_english_units():
    units = split_sentences(EN)
    assert units[0] == "# Billing migration"
    assert "Dr. Smith approved the budget for new database servers, e.g. two replicas." in units
    # A hard-wrapped sentence stays one sentence.
    assert (
        "The migration is expected to take three weeks and will run in parallel with the old billing system."
        in units
    )
    assert "We will review migration progress every Friday!" in units
    assert "Did anyone verify the database backups?" in units
    assert "- Owner: Alice, with help from Bob." in units
    code = [u for u in units if u.startswith("```")]
    assert code == ['```python\ntotal = 1. + 2.\nprint("a. b! c?")\n```']
    assert len(units) == 12


def test_split_chinese_units():
    units = split_sentences(ZH)
    assert units == [
        "# 计费系统迁移",
        "我们决定在三月把计费服务从 MySQL 迁移到 Postgres。",
        "迁移预计需要三周！",
        "旧的计费系统会并行运行吗？",
        "会的，旧系统会并行运行一个月。",
        "计费数据库的备份每天晚上自动验证。",
        "午饭吃了饺子。",
        "旧的 MySQL 集群在迁移完成后关闭。",
        "迁移完成后，计费服务的性能预计提升一倍。",
        "- 风险：切换数据库时可能丢失计费数据。",
    ]


def test_split_edge_cases():
    assert split_sentences("") == []
    assert split_sentences("one line without end") == ["one line without end"]
    assert split_sentences("Version 3.14 is out. It works.") == ["Version 3.14 is out.", "It works."]
    assert split_sentences("Title\n=====\nBody text.") == ["# Title", "Body text."]
    assert split_sentences("A.\n\n---\n\nB.") == ["A.", "B."]
    assert split_sentences("```\nunclosed. code\n") == ["```\nunclosed. code"]


def _sentences(text):
    from memstrata.models.summarize import _clean

    return [_clean(u) for u in split_sentences(text)]


def _check_points(points, text, k):
    whole = _sentences(text)
    assert 0 < len(points) <= k
    assert all(p in whole for p in points)  # whole sentences, never cut
    idx = [whole.index(p) for p in points]
    assert idx == sorted(idx)  # original order kept
    assert len(set(points)) == len(points)


def test_key_points_english(embedder):
    for k in (1, 3, 5):
        pts = key_points(EN, embedder, max_points=k)
        assert len(pts) == k
        _check_points(pts, EN, k)
    pts = key_points(EN, embedder, max_points=3)
    assert "Lunch was pizza." not in pts
    assert "Billing migration" not in pts  # headings are structure
    assert not any(p.startswith("```") for p in pts)
    assert any("Postgres" in p for p in pts)


def test_key_points_chinese(embedder):
    pts = key_points(ZH, embedder, max_points=3)
    assert len(pts) == 3
    _check_points(pts, ZH, 3)
    assert "午饭吃了饺子。" not in pts
    assert sum("迁移" in p or "计费" in p for p in pts) >= 2


def test_short_text_comes_back_whole(embedder):
    text = "# Note\n\nFirst fact. Second fact.\n- a list item"
    assert key_points(text, embedder, max_points=5) == ["First fact.", "Second fact.", "a list item"]
    assert key_points("", embedder) == []
    assert key_points(text, embedder, max_points=0) == []
    assert one_sentence("Only one sentence here.", embedder) == "Only one sentence here."
    assert one_sentence("", embedder) == ""


def test_one_sentence_and_paragraph(embedder):
    one = one_sentence(EN, embedder)
    assert one in _sentences(EN) and "pizza" not in one
    para = paragraph(EN, embedder, max_sentences=3)
    pts = key_points(EN, embedder, max_points=3)
    assert para == " ".join(pts)
    zh_para = paragraph(ZH, embedder, max_sentences=2)
    zh_pts = key_points(ZH, embedder, max_points=2)
    assert zh_para == "".join(zh_pts)  # Chinese sentences join without spaces
    # List items without end punctuation get one when joined.
    assert paragraph("- alpha beta\n- gamma delta", embedder) == "alpha beta. gamma delta."


def test_summaries_are_deterministic(embedder):
    assert key_points(EN, embedder, 4) == key_points(EN, embedder, 4)
    assert paragraph(ZH, embedder) == paragraph(ZH, embedder)



SYNC_NOTE = """# Sync your vault on iOS

There are several ways to keep an Obsidian vault in step between an iPhone and a computer.

**How to sync your vault using Working Copy**:

1. Install Working Copy from the App Store and clone your vault's git repository.
2. Open Obsidian, create a new vault with the same name, and link it to the Working Copy folder.
3. Commit and push from Working Copy when you are done editing.

**Using iCloud Drive**:

- Create the vault inside the Obsidian folder of iCloud Drive.
- On the computer, open the same folder from iCloud Drive.

Working Copy keeps a full git history of your notes, so every change can be reviewed and undone, while iCloud Drive only syncs the latest version of each file.

> Tip: avoid syncing the same vault with two services at once.

| Method | Cost | History |
| --- | --- | --- |
| Working Copy | paid | full |
| iCloud | free | none |
"""
ZH_NOTE = """# 松鸦

**分类**：

- 界：动物界
- 科：鸦科

松鸦是鸦科松鸦属的一种中型鸣禽，广泛分布于欧洲、北非和亚洲的温带森林。
它的翅膀上有醒目的蓝黑相间横纹。
秋天，松鸦会把大量橡子埋进土里储藏过冬，因此对橡树林的更新有重要作用。
**叫声**：
松鸦常模仿其他鸟类的叫声。
"""


def test_one_sentence_is_the_defining_sentence_not_a_label(embedder):
    # the cold one-liner of a long note: never its heading, its bold labels ("**How to ...**:"),
    # its list items or table rows, but the sentence most like the whole note
    assert key_points(SYNC_NOTE, embedder, 1) != [one_sentence(SYNC_NOTE, embedder)]  # centrality alone picks a label
    assert one_sentence(SYNC_NOTE, embedder) == ("There are several ways to keep an Obsidian vault in step between "
                                                 "an iPhone and a computer.")
    assert one_sentence(ZH_NOTE, embedder) == "松鸦是鸦科松鸦属的一种中型鸣禽，广泛分布于欧洲、北非和亚洲的温带森林。"
    # the opening is no definition when it is small talk: the note's subject wins
    aside = "Quick note before I forget the details.\n\n" + EN.split("\n", 2)[2]
    assert "Postgres" in one_sentence(aside, embedder) or "billing" in one_sentence(aside, embedder)
    # only labels and list items: the most central unit, as before
    assert one_sentence("**Steps**:\n\n- open the app\n- pick a vault", embedder) in ("open the app", "pick a vault")


def test_a_label_alone_is_no_one_line_summary(embedder):
    """A new user's review: a compressed runbook's one line was "Rotating the Stripe webhook secret:",
    which says nothing of the steps. A label the ranking picks goes with what it labels (not a code block)."""
    steps = "Rotating the Stripe webhook secret:\n- stripe dashboard\n- vault billing/stripe\n- restart webhooks"
    assert one_sentence(steps, embedder) == "Rotating the Stripe webhook secret: stripe dashboard"
    code = "Rotating the Stripe webhook secret:\n\n```\nkubectl rollout restart deploy/billing-webhooks\n```"
    assert "\n" not in one_sentence(code, embedder)
