"""config.md: every threshold in one typed settings object with documented defaults."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from pathlib import Path

import yaml

from memstrata.storage.errors import InvalidInput
from memstrata.storage import layout
from memstrata.storage.safe_io import read_regular_text

CONFIG_FILE = "config.md"
CONFIG_MAX_BYTES = 1024 * 1024  # a larger config.md is refused (it is read by every command)


@dataclass
class Settings:
    """Settings read from config.md's frontmatter; each field documents its default."""

    # Tiers: days since an entry was last touched (updated or accessed).
    hot_days: int = 7            # 0-7 days: hot (L0, full text)
    warm_days: int = 29          # 8-29: warm (L1, key points)
    cold_days: int = 89          # 30-89: cold (L2/L3, one line + tags); 90+: archive (L4)
    forget_after_days: int = 180     # archived and untouched this long (and unreferenced): to the trash
    trash_retention_days: int = 30   # trash entries older than this are purged by `trash purge`
    split_threshold: int = 100       # a category past this many entries gets a split warning
    grep_max_entries: int = 50       # strategy advice: grep under this many entries
    index_max_entries: int = 500     # index navigation up to this many; vectors beyond
    embedding_model: str = "bundled"  # "bundled" (all-MiniLM-L6-v2) or any sentence-transformers name/path
    promote_threshold: float = 0.65  # every cold/archived entry this similar to the task comes back hot
    promote_best_cosine: float = 0.5  # ... the most similar one from this (bench/promotion_tasks.py)
    promote_min_relevance: float = 0.05  # ... and recall's likeliest answer from this relevance
    promote_max: int = 50            # at most this many promotions per run
    promote_keep_important: bool = True  # important/high entries keep their tier when promoting
    autoload_budget: int = 2000      # tokens, counted with the model's tokenizer
    autoload_min_relevance: float = 0.3  # a recall hit joins autoload if its relevance >= this share of the best hit's
    autoload_written_boost: float = 2.0  # session start: a memory written now counts (1 + this) x its weight
    autoload_written_half_life_days: float = 7.0  # ... the boost halves every this many days (scoring/start_order.py)
    autoload_project_boost: float = 2.0  # session start: a memory of the session's project (its cwd) counts this x; other projects' are left out (scoring/project_scope.py)
    project_folders: str = "projects"    # categories whose sub-folders are projects (comma-separated; captured sessions' folders are too)
    start_promote_prompts: int = 3   # session start: the project's last captured session's last prompts used as the task (0: none; scoring/current_task.py)
    start_promote_max: int = 3       # ... at most this many memories brought back for them, in the background
    near_duplicate_threshold: float = 0.92  # embedding similarity that counts as a near-duplicate
    conflict_similarity: float = 0.45       # another title, the same tag set (no other entry has it) + this similarity = same subject (bench/conflicts.py --sweep)
    conflict_title_similarity: float = 0.6  # when several entries of a category share a title: the one this similar is the subject
    conflict_departed_similarity: float = 0.55  # another title, no tag set: the write leaves a value the nearest entry states + this similarity (bench/conflicts.py --sweep)
    secrets: str = "refuse"          # refuse | warn
    service: str = "auto"            # auto | off: use/start the warm local service
    service_idle_minutes: int = 15
    mcp_http_header_seconds: int = 10     # `mem mcp --http`: a connection that sends no whole request in this long is closed
    mcp_http_max_connections: int = 256   # ... open connections at most; more are closed as they come (the fd limit stays far)
    mcp_http_session_seconds: int = 1800  # ... an MCP session idle this long expires (its memory is freed)
    ann_min_rows: int = 20000        # build an ANN index on the vector table past this many rows
    index_cache_mb: int = 128        # LanceDB's cache of index pages, per process (trees with the same size share one)
    shared_root: str | None = None   # a shared memory root other agents can read
    agent_name: str | None = None    # written as `agent:` on shared entries
    shared_from_others: bool = False  # autoload and the hooks load shared-root notes another user wrote (or from a shared root another user owns or anyone can write) only when true
    sync_interval: int = 0           # seconds between team syncs by the warm service / `mem sync --remote --watch 0` (0: off; docs/team.md)
    git_connect_timeout: int = 20    # seconds a team sync's git waits to reach the remote (ssh ConnectTimeout; docs/team.md)
    git_idle_timeout: int = 60       # seconds without data before a team sync's git gives up (http.lowSpeedTime, ssh keep-alives)
    git_timeout: int = 900           # seconds one fetch, push or clone may take in all, however slow the remote
    edit_quiet_ms: int = 20          # a file saved outside the engine this recently is replaced only once it stayed unchanged this long (an editor mid-save)
    max_entry_bytes: int = 1048576   # an entry body larger than this (UTF-8 bytes; 1 MB, at most 8 MB) is refused; 0: up to 8 MB (a file past 16 MB is never read)
    # Capture (mem capture, docs/capture.md): the sessions coding agents had, kept as entries.
    capture_category: str = "sessions"  # where captured sessions go: <capture_category>/<project>/
    capture_exclude: str | None = None  # paths (comma-separated) whose sessions are never captured; also a `.mem-no-capture` file in the project
    capture_team_sync: bool = False     # `mem sync --remote` pushes captured sessions too (default: they stay on this machine)
    capture_in_vault: bool = False      # capture into an adopted vault (default: refused, sessions would fill your notes' folder)
    capture_turn_max_chars: int = 20000  # a turn longer than this (a pasted log) is cut, saying how much was left out (0: never)
    # Recall (retrieval/): the vector index, its sync and the ranking. Weights are relative.
    chunk_overlap_tokens: int = 32   # overlap between the windows a long entry is split into
    chunk_max_sentences: int = 48    # an entry gets at most this many sentence-level chunks (0: none)
    chunk_sentence_min_words: int = 15  # only entries of at least this many words get sentence chunks (0: all; mostly CJK text: always; bench/locomo.py --set)
    chunk_context: bool = True       # also embed each entry with the one written just before it (same category, same sitting)
    recall_candidates: int = 100     # rows each of the vector and full-text searches return
    recall_relative_relevance: float = 0.0  # hits of an answered query below this share of the best hit's relevance are dropped (a weak tail; bench/fit_relevance.py chose 0 with the Chinese corpora in, issue 40)
    recall_min_relevance: float = 0.01  # a query whose best hit is less likely than this to answer (calibrated relevance, 0-1) gets no hits; 0 keeps all (docs/recall.md)
    recall_sync_max: int = 200       # recall re-embeds at most this many changed entries first; beyond: fallback
    recall_dense_weight: float = 2.0     # best chunk cosine (absolute; bench/fit_ranking.py, chosen by LOCO)
    recall_text_weight: float = 1.0      # BM25 over that of an average entry holding each query term once
    recall_text_candidates: int = 200    # full-text candidates rescored by BM25 (k1, b below) over in-memory stats
    recall_bm25_k1: float = 0.9          # ... (> 0; LanceDB's own k1, b are fixed and its scores have no fixed scale)
    recall_bm25_b: float = 0.5
    recall_feedback_weight: float = 0.0  # pseudo-relevance feedback (RM3) query, relative to the text side (0: off)
    recall_feedback_docs: int = 3        # feedback: top entries read
    recall_dense_feedback_weight: float = 0.0  # Rocchio: query vector moved towards the top entries' best chunks
    recall_feedback_terms: int = 10      # feedback: terms added
    recall_dense_name_share: float = 0.05  # query names that >= this share of entries mention, or of their projects' captured turns when said >= 1/share times, leave the dense query (0: all)
    recall_entity_boost: float = 0.35    # per share of the entities named in the query that an entry mentions
    recall_neighbour_weight: float = 0.15  # share of the scores of the entries written just before/after
    recall_neighbour_second: float = 0.5  # ... entries two steps away count this much of an adjacent one
    recall_session_weight: float = 0.35   # share of the best score of the sitting the entry was written in
    recall_session_gap_minutes: int = 60  # entries of a category this close in time form one sitting
    recall_date_boost: float = 0.25       # entries written near a date the query names
    recall_date_after_days: int = 7       # ... the boost fades over this many days after the date
    recall_archived_factor: float = 0.8   # archived/expired entries rank below active ones at equal relevance
    index_optimize_every: int = 20        # compact the vector table after this many table versions
    index_cleanup_minutes: int = 10       # old table versions older than this are deleted at compaction
    # Aging (mem maintain): what compression keeps in the tree; the original stays in .full/.
    compress_bodies: bool = True      # maintain compresses warm/cold/archived bodies (`mem init --adopt`: off, notes keep their text)
    archive_moves_files: bool = True  # maintain moves archived entries to {category}/archived/ and forgets them to the trash (`mem init --adopt`: off, notes stay where they are)
    category_indexes: bool = True     # an INDEX.md in each category folder (an adopted vault: off unless `mem init --adopt --indexes`)
    compress_key_points: int = 5      # warm (L1): at most this many key points
    summary_sentences: int = 3        # archive (L4): sentences in the paragraph summary

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def with_value(self, key: str, raw) -> "Settings":
        """A copy with one setting changed, the value converted to the field's type."""
        require_known(key)
        default = getattr(Settings(), key)
        value = _convert(key, raw, default)
        updated = dataclasses.replace(self, **{key: value})
        if not updated.hot_days < updated.warm_days < updated.cold_days:
            raise InvalidInput(f"the tiers need hot_days < warm_days < cold_days "
                               f"(that would be {updated.hot_days}, {updated.warm_days}, {updated.cold_days})")
        return updated


def require_known(key: str) -> None:
    """InvalidInput for a setting that does not exist, with the closest names."""
    import difflib

    names = Settings.field_names()
    if key not in names:
        close = difflib.get_close_matches(str(key), names, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else "; `mem config list` shows them all"
        raise InvalidInput(f"unknown setting {key!r}{hint}")


# Settings with a bounded range (inclusive); others only need the right type (ints: 0 or more).
_RANGES = {
    "promote_threshold": (0.0, 1.0), "autoload_min_relevance": (0.0, 1.0), "near_duplicate_threshold": (0.0, 1.0),
    "promote_best_cosine": (0.0, 1.0), "promote_min_relevance": (0.0, 1.0),
    "autoload_written_boost": (0.0, 100.0), "autoload_written_half_life_days": (0.01, 3650.0),
    "autoload_project_boost": (1.0, 100.0), "start_promote_prompts": (0, 50), "start_promote_max": (0, 1000),
    "conflict_similarity": (0.0, 1.0), "conflict_departed_similarity": (0.0, 1.0), "recall_dense_name_share": (0.0, 1.0), "recall_neighbour_second": (0.0, 1.0),
    "recall_archived_factor": (0.0, 1.0), "recall_bm25_b": (0.0, 1.0), "recall_bm25_k1": (0.01, 10.0),
    "recall_min_relevance": (0.0, 1.0), "recall_relative_relevance": (0.0, 1.0),
    "autoload_budget": (1, 1_000_000), "recall_candidates": (1, 100_000), "promote_max": (0, 100_000),
    "split_threshold": (1, 1_000_000), "chunk_max_sentences": (0, 10_000), "chunk_sentence_min_words": (0, 100_000), "recall_text_candidates": (1, 100_000),
    "recall_feedback_docs": (1, 1000), "recall_feedback_terms": (1, 1000), "compress_key_points": (1, 1000),
    "summary_sentences": (1, 1000), "max_entry_bytes": (0, 8 * 1024 * 1024), "service_idle_minutes": (0, 7 * 24 * 60),  # 0: never idle out
    "index_cache_mb": (8, 1_000_000),
    "git_connect_timeout": (1, 3600), "git_idle_timeout": (1, 3600), "git_timeout": (1, 7 * 24 * 3600),
    "mcp_http_header_seconds": (1, 3600), "mcp_http_max_connections": (1, 100_000),
    "mcp_http_session_seconds": (1, 7 * 24 * 3600), "capture_turn_max_chars": (0, 1_000_000),
}
MODEL_NAME_MAX = 1000  # a model name or path longer than this is a mistake (a pasted text)


def _kind(key: str, default) -> str:
    """What a numeric setting takes, as an error says it ("a whole number from 8 to 1,000,000")."""
    whole = isinstance(default, int)
    if key not in _RANGES:
        return "a whole number, 0 or more" if whole else "a number"
    low, high = _RANGES[key]
    return f"a whole number from {low:,} to {high:,}" if whole else f"a number from {low:g} to {high:g}"


def _convert(key: str, raw, default):
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("null", "none", "")):
        if default is None:
            return None
        raise InvalidInput(f"setting {key} needs a value")
    try:
        if isinstance(default, bool):
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("true", "yes", "1", "on"):
                return True
            if text in ("false", "no", "0", "off"):
                return False
            raise ValueError
        if isinstance(default, int):
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError  # 1.5 is no whole number (int() made it 1)
            value = int(raw)
            if value < 0:
                raise ValueError
        elif isinstance(default, float):
            value = float(raw)
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError
        else:
            value = None
    except (TypeError, ValueError):
        if isinstance(default, bool):
            raise InvalidInput(f"setting {key} must be true or false, not {raw!r}") from None
        raise InvalidInput(f"setting {key} must be {_kind(key, default)}, not {raw!r}") from None
    if value is not None:
        low, high = _RANGES.get(key, (value, value))
        if not low <= value <= high:
            raise InvalidInput(f"setting {key} must be {_kind(key, default)}, not {raw!r}")
        return value
    value = str(raw)
    if key == "secrets" and value not in ("refuse", "warn"):
        raise InvalidInput("setting secrets must be 'refuse' or 'warn'")
    if key == "capture_category":
        from memstrata.storage.paths import validate_category

        return validate_category(value)
    if key == "service" and value not in ("auto", "off"):
        raise InvalidInput("setting service must be 'auto' or 'off'")
    if key == "embedding_model" and (not value.strip() or len(value) > MODEL_NAME_MAX
                                     or any(ord(c) < 32 for c in value)):
        raise InvalidInput("setting embedding_model must be 'bundled', a sentence-transformers model name "
                           "or a folder path (one line)")
    return value


CONFIG_PROSE = """
# memstrata configuration

The YAML block above holds only the settings you changed (`mem config set KEY VALUE`);
every other setting takes its documented default, so a newer memstrata's better
defaults reach this tree too. `mem config list` shows every setting with its current
value. Prose below the block is yours: the engine keeps it when it rewrites the settings.
"""

_HEADER_COMMENT = "# Settings changed from their defaults (see `mem config list` for all of them).\n"


def load_settings(root: Path) -> Settings:
    """Read config.md (missing file or keys give the defaults; bad values are an error)."""
    from memstrata.storage.codec import split_frontmatter

    path = layout.path(root, CONFIG_FILE)
    if not path.exists():
        return _with_own(root, Settings())
    try:
        data, _ = split_frontmatter(read_config_text(root))
    except Exception as exc:  # CorruptEntry, decoding, not a regular file, too large
        raise InvalidInput(f"config.md cannot be read: {exc}") from None
    settings = Settings()
    for key, value in data.items():
        if key in Settings.field_names():
            try:
                settings = settings.with_value(key, value)
            except InvalidInput as exc:  # a hand edit or an old pull: say how to get out
                raise InvalidInput(f"config.md: {exc.message}; `mem config unset {key}` gives it its default "
                                   "again") from None
    return _with_own(root, settings)


def _with_own(root: Path, settings: Settings) -> Settings:
    """The settings with this machine's own values (storage/own_settings.py: a lower forget_after_days
    this machine set, which a peer's config.md held back); one that is not valid now is left out."""
    from memstrata.storage import own_settings

    for key, value in own_settings.read(root).items():
        if key in Settings.field_names():
            try:
                settings = settings.with_value(key, value)
            except InvalidInput:
                continue  # config.md's value applies
    return settings


def read_config_text(root: Path) -> str:
    """The text of config.md: a regular file (a symlink to one is followed) of at most CONFIG_MAX_BYTES.

    OSError otherwise (safe_io.NotRegularFile for a FIFO, socket or device: never opened).
    """
    return read_regular_text(layout.path(root, CONFIG_FILE), CONFIG_MAX_BYTES, follow_symlinks=True)


def render_config(changed: dict, prose: str = CONFIG_PROSE) -> str:
    """config.md with `changed` (setting name -> value) as its YAML block."""
    header = yaml.safe_dump(changed, sort_keys=False, allow_unicode=True) if changed else ""
    return f"---\n{_HEADER_COMMENT}{header}---\n{prose}"


def changed_settings(root: Path) -> dict:
    """The settings config.md sets explicitly (unknown keys are kept, for newer versions)."""
    from memstrata.storage.codec import split_frontmatter

    path = layout.path(root, CONFIG_FILE)
    if not path.exists():
        return {}
    try:
        data, _ = split_frontmatter(read_config_text(root))
    except Exception as exc:  # CorruptEntry, decoding, not a regular file, too large
        raise InvalidInput(f"config.md cannot be read: {exc}") from None
    return dict(data)


def set_setting(root: Path, key: str, raw) -> Settings:
    """Validate and store one setting in config.md; returns the new settings."""
    from memstrata.storage.atomic import atomic_write_text

    from memstrata.storage import own_settings

    updated = load_settings(root).with_value(key, raw)
    changed = changed_settings(root)
    changed[key] = getattr(updated, key)
    atomic_write_text(layout.path(root, CONFIG_FILE), render_config(changed, config_prose(root)), root=root)
    own_settings.drop(root, key)  # set by hand here: config.md holds it now
    return updated


def unset_setting(root: Path, key: str) -> Settings:
    """Remove one setting from config.md: it takes its documented default again."""
    from memstrata.storage.atomic import atomic_write_text

    from memstrata.storage import own_settings

    require_known(key)
    changed = changed_settings(root)
    changed.pop(key, None)
    atomic_write_text(layout.path(root, CONFIG_FILE), render_config(changed, config_prose(root)), root=root)
    own_settings.drop(root, key)
    return load_settings(root)


def config_prose(root: Path) -> str:
    from memstrata.storage.codec import split_frontmatter

    path = layout.path(root, CONFIG_FILE)
    if not path.exists():
        return CONFIG_PROSE
    try:
        return split_frontmatter(read_config_text(root))[1] or CONFIG_PROSE
    except Exception:
        return CONFIG_PROSE
