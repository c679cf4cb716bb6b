"""Reading the LoCoMo conversations in ../shared/bench/locomo (research data, not in this repo)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "bench" / "locomo"


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    created: datetime


@dataclass
class Question:
    question: str
    category: int
    evidence: list[str]


def conversation_files(data_dir: Path = DATA_DIR) -> list[Path]:
    return sorted(Path(data_dir).glob("*.json"))


def _session_time(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def load(path: Path) -> tuple[list[Turn], list[Question]]:
    """Turns ("speaker: text" + photo caption, dated at their session + 10 s per turn) and questions."""
    data = json.loads(Path(path).read_text())
    turns: list[Turn] = []
    n = 1
    while f"session_{n}" in data:
        start = _session_time(data[f"session_{n}_date_time"])
        for i, turn in enumerate(data[f"session_{n}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [photo: {turn['blip_caption']}]"
            turns.append(Turn(turn["dia_id"], turn["speaker"], text, start + timedelta(seconds=10 * i)))
        n += 1
    known = {t.dia_id for t in turns}
    questions = []
    for qa in data["qa"]:
        if qa.get("category") == 5:
            continue
        evidence = []
        for raw in qa.get("evidence", []):
            for part in re.split(r"[;,]", str(raw)):
                ident = part.replace(" ", "").strip()
                if ident in known and ident not in evidence:
                    evidence.append(ident)
        if evidence:
            questions.append(Question(qa["question"], int(qa["category"]), evidence))
    return turns, questions
