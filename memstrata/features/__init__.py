"""One file per feature over the engine: recall, versions, aging, review, promotion, split, shared space, daily notes, import (transfer) and export, built-in import."""
