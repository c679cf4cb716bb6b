"""Recall results: one hit per entry (id, title, score, snippet, signals) and the answer's strategy."""
from __future__ import annotations

from dataclasses import dataclass, field

SNIPPET_CHARS = 300


def clip(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class RecallHit:
    id: str
    title: str
    score: float
    snippet: str
    category: str = ""
    tier: str = ""
    status: str = ""
    path: str | None = None
    created: str | None = None
    signals: dict | None = None  # only with explain

    def to_dict(self) -> dict:
        data = {"id": self.id, "title": self.title, "score": round(float(self.score), 4),
                "snippet": clip(self.snippet), "category": self.category, "tier": self.tier,
                "status": self.status, "path": self.path, "created": self.created}
        if self.signals is not None:
            data["signals"] = self.signals
        return data


@dataclass
class RecallResult:
    """What recall answered and how: `strategy` is hybrid, vector, text, grep or index."""

    query: str
    strategy: str
    results: list[RecallHit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        data = {"query": self.query, "strategy": self.strategy, "results": [h.to_dict() for h in self.results],
                "notes": list(self.notes)}
        if self.info:
            data["info"] = self.info
        return data

    @property
    def ids(self) -> list[str]:
        return [h.id for h in self.results]
