"""The memory root on disk: where it is, how it is initialised, where entry files go."""
from __future__ import annotations

import os
from pathlib import Path

from memstrata.storage.errors import InvalidInput, NotFound
from memstrata.storage import layout
from memstrata.storage.atomic import atomic_write_text, ensure_dir
from memstrata.storage.config import CONFIG_FILE, Settings, render_config
from memstrata.storage.safe_io import read_regular_text
from memstrata.storage.paths import entry_dir, file_slug, inside_root

DEFAULT_ROOT = "~/memory"
TREE_MARK = "memstrata"  # what config.md says in a folder made by `mem init`
STARTER_CATEGORIES = {
    "daily": "Daily notes, one entry per day (mem daily).",
    "meetings": "Meeting notes and their conclusions.",
    "long-term": "Knowledge meant to last: decisions, conventions, lessons.",
}
# .full/ and .versions/ are memories: kept in git; .quarantine/ holds what the doctor set aside unread
# .secrets-allowed.json: `mem secrets allow` is this machine's word (storage/secret_allow.py), never a team's
GITIGNORE = ".vectors/\n.trash/\n.cache/\n.quarantine/\n.lock\n*.lock\n*.sock\n.*.tmp\n.*.kept\n.secrets-allowed.json\n"


def resolve_root(root: str | os.PathLike | None = None) -> Path:
    """--root, else $MEMSTRATA_HOME, else ~/memory (made absolute; symlinks resolved)."""
    chosen = root if root not in (None, "") else os.environ.get("MEMSTRATA_HOME") or DEFAULT_ROOT
    path = Path(os.path.expanduser(str(chosen)))
    return Path(os.path.realpath(path))


def is_initialised(root: Path) -> bool:
    """A folder is a memory tree only when it says so: its config.md is a real engine config
    (`is_engine_config`). Any other folder (a vault whose own config.md mentions memstrata) is
    never read as a tree nor written into."""
    try:
        text = read_regular_text(layout.path(root, CONFIG_FILE), limit=1024 * 1024, follow_symlinks=True)
    except (OSError, UnicodeDecodeError):
        return False
    return is_engine_config(text)


def is_engine_config(text: str) -> bool:
    """Whether a config.md is one `mem init` wrote: a YAML frontmatter block that parses to a
    mapping of the engine's settings (or none), and the file names memstrata (its prose or comment)."""
    from memstrata.storage.codec import split_frontmatter

    if not text.lstrip("\ufeff").startswith("---") or TREE_MARK not in text.lower():
        return False
    try:
        data, _ = split_frontmatter(text)
    except Exception:  # noqa: BLE001 - CorruptEntry or anything the YAML loader raises
        return False
    return isinstance(data, dict) and (not data or any(key in Settings.field_names() for key in data))


def _lost_engine_home(root: Path) -> bool:
    """An adopted tree whose settings file is gone (a peer's commit deleted it): its `.memstrata/`
    folder is there without `.memstrata/config.md`."""
    home = Path(root) / layout.ENGINE_HOME
    return home.is_dir() and not (home / CONFIG_FILE).exists()


# What only `mem init` and the engine make at a tree's top (a tree made by `mem init`): a folder holding
# one of these is a memory tree whatever its config.md says. `.trash/` alone is no sign (Obsidian's own
# trash folder has that name): only with the engine's audit file in it.
_ENGINE_MADE = (".versions", ".full", ".vectors", ".cache/catalog.db")


def engine_files(root: Path) -> list[str]:
    """The files and folders only a memory tree made by `mem init` holds that `root` holds (the tree's
    own kept versions, originals, index, catalog, trash audit and root INDEX.md); [] for any other folder."""
    root = Path(root)
    found = [rel for rel in _ENGINE_MADE if os.path.lexists(root / rel)]
    for rel, opening in ((".trash/INDEX.md", "# Trash audit"), ("INDEX.md", "---\ntype: root-index")):
        try:
            if read_regular_text(root / rel, limit=64 * 1024).startswith(opening):
                found.append(rel)
        except (OSError, UnicodeDecodeError):
            continue
    return found


def config_problem(root: Path) -> str | None:
    """Why a folder that holds a memory tree is not read as one, in one line, when its settings file is
    there and broken (malformed YAML, truncated, not UTF-8) or, in a tree made by `mem init`, gone; None
    for an initialised tree and for any folder that holds no tree. Nothing is read or written in such
    a folder until the file reads: `mem init` and `mem init --adopt` refuse it too (adopting a tree
    gave every entry a second id and hid its trash, versions and originals)."""
    from memstrata.storage.codec import split_frontmatter
    from memstrata.storage.errors import CorruptEntry

    root = Path(root)
    if is_initialised(root):
        return None
    rel = layout.at(root, CONFIG_FILE)
    path = root / rel
    if not os.path.lexists(path):
        made = [] if layout.is_adopted(root) else engine_files(root)
        if not made:
            return None
        return (f"{rel} is missing, though {root} holds a memory tree ({', '.join(made[:3])}); restore it "
                f"(`git checkout -- {rel}`), or `mem init --root {root}` writes a new one with the default settings")
    ours = layout.is_adopted(root) or bool(engine_files(root))
    try:
        text = read_regular_text(path, limit=1024 * 1024, follow_symlinks=True)
    except (OSError, UnicodeDecodeError) as exc:
        why = str(exc)
    else:
        try:
            split_frontmatter(text)
            why = "it does not hold memstrata's settings (a YAML block of `setting: value` lines between `---` lines)"
        except CorruptEntry as exc:
            why = exc.message
            ours = ours or "mem config" in text  # the engine's own wording (`mem config list`), half cut
    if not ours:
        return None  # a folder's own config.md (a vault's note, not adopted yet): not ours to judge
    init = f"mem init {'--adopt ' if layout.is_adopted(root) else ''}--root {root}"
    return (f"{rel} cannot be read: {why}; fix it by hand (`mem config list` says the same), or move it "
            f"aside and run `{init}` for the default settings. Nothing in {root} is touched meanwhile")


def require_initialised(root: Path) -> None:
    """NotFound (with how to make one) unless `root` is an initialised memory tree; InvalidInput when it
    holds a tree whose settings file cannot be read (config_problem)."""
    if not Path(root).exists():
        raise NotFound(f"no memory tree at {root}; run `mem init --root {root}` to make one")
    if not Path(root).is_dir():
        raise InvalidInput(f"{root} is not a folder")
    if is_initialised(root):
        return
    problem = config_problem(root)
    if problem:
        raise (InvalidInput if os.path.lexists(layout.path(root, CONFIG_FILE)) else NotFound)(problem)
    if _lost_engine_home(root):
        raise NotFound(f"{root}/{layout.ENGINE_HOME}/{CONFIG_FILE} is missing (deleted, e.g. by a git commit), so "
                       f"{root} is not read as a memory tree and nothing in it is touched; restore the file "
                       f"(`git checkout -- {layout.ENGINE_HOME}/{CONFIG_FILE}`) or run `mem init --adopt --root {root}`")
    raise NotFound(f"{root} is not a memory tree (no memstrata config.md); run `mem init --root {root}` to make it one")


def initialise(root: Path, settings: Settings | None = None, adopted: bool = False) -> list[str]:
    """Create the root (0700), config.md and .gitignore; returns what was made.

    `adopted` (a vault): the settings go first, into `.memstrata/config.md` (storage/layout.py),
    so a killed adopt resumes with the vault's rules; nothing is written beside the user's notes."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{root} exists and is not a folder")
    made = []
    if not root.exists():
        made.append(str(root))
        ensure_dir(root)
        os.chmod(root, 0o700)
    elif not adopted and not layout.is_adopted(root):  # a vault's folders keep their modes: only .memstrata/ is private
        os.chmod(root, 0o700)
    if adopted and not is_initialised(root):
        home = root / layout.ENGINE_HOME
        ensure_dir(home)
        os.chmod(home, 0o700)
        if not (home / ".gitignore").exists():
            atomic_write_text(home / ".gitignore", layout.ADOPTED_GITIGNORE, root=root)
        atomic_write_text(home / CONFIG_FILE, render_config(_non_defaults(settings)), root=root)
        made.append(f"{layout.ENGINE_HOME}/{CONFIG_FILE}")
        return made
    if layout.is_adopted(root):
        return made
    if not (root / CONFIG_FILE).exists():
        atomic_write_text(root / CONFIG_FILE, render_config(_non_defaults(settings)), root=root)
        made.append(CONFIG_FILE)
    if not (root / ".gitignore").exists():
        atomic_write_text(root / ".gitignore", GITIGNORE, root=root)
        made.append(".gitignore")
    else:
        ensure_gitignore(root)
    return made


def _non_defaults(settings: Settings | None) -> dict:
    if settings is None:
        return {}
    defaults = Settings().to_dict()
    return {k: v for k, v in settings.to_dict().items() if defaults.get(k) != v}


def unique_entry_path(root: Path, category: str, title: str, archived: bool = False,
                      keep: str | None = None, avoid=()) -> str:
    """A free relative path for an entry ({category}/{slug}.md, then -2, -3 ...).

    `keep` is the entry's current path: it counts as free (an entry may stay where it is).
    `avoid`: paths taken though not on disk yet (other entries of an import batch).
    """
    folder = entry_dir(category, archived)
    inside_root(Path(root), folder)  # a symlinked category folder must not lead a write out of the root
    taken = _check_folder_levels(Path(root), folder)
    base = file_slug(title)
    within = f"{folder}/" if folder else ""  # "" is an adopted vault's top level
    candidate = f"{within}{base}.md"
    n = 2
    # a dangling symlink or FIFO is taken too, and so is a name that differs only in case
    while candidate != keep and (os.path.lexists(Path(root) / candidate) or candidate in avoid
                                 or candidate.rsplit("/", 1)[-1].casefold() in taken):
        candidate = f"{within}{base}-{n}.md"
        n += 1
    return candidate


def ensure_gitignore(root: Path) -> bool:
    """Add the lines of GITIGNORE a tree's .gitignore lacks (a tree made by an older version, a
    peer's edit); the user's own lines stay. An adopted vault's `.memstrata/.gitignore` is the
    engine's alone: rewritten to its lines. True when the file changed."""
    from memstrata.storage.safe_io import read_regular_text

    adopted = layout.is_adopted(root)
    path = Path(root) / (f"{layout.ENGINE_HOME}/.gitignore" if adopted else ".gitignore")
    try:
        text = read_regular_text(path, 1024 * 1024)
    except FileNotFoundError:
        if not adopted:
            return False
        text = ""  # the vault's own root .gitignore is never touched; the engine's folder has its own
    except (OSError, ValueError):
        return False  # missing, a link, a special file, not UTF-8: left as it is
    if adopted:  # the engine's own file in its own folder: exactly its lines (a peer's `*` would hide
        # every engine file from git)
        if text == layout.ADOPTED_GITIGNORE:
            return False
        atomic_write_text(path, layout.ADOPTED_GITIGNORE, root=Path(root))
        return True
    have = {line.strip() for line in text.splitlines()}
    missing = [line for line in GITIGNORE.splitlines() if line not in have]
    if not missing:
        return False
    atomic_write_text(path, text + ("" if text.endswith("\n") or not text else "\n") + "\n".join(missing) + "\n",
                      root=Path(root))
    return True


def top_level_spelling(root: Path, name: str) -> str:
    """How the tree spells the top-level folder `name` (a vault's `Daily/` for `daily`): the name
    of a folder that differs from it only in case, else `name` itself."""
    try:
        siblings = os.listdir(root)
    except OSError:
        return name
    if name in siblings:
        return name
    return next((s for s in sorted(siblings) if s.casefold() == name.casefold() and (Path(root) / s).is_dir()), name)


def _check_folder_levels(root: Path, folder: str) -> set[str]:
    """InvalidInput when a level of `folder` is a file (not a folder), or differs only in case from a
    folder beside it (`Proj` next to `proj`: one folder on macOS and Windows). Returns the casefolded
    names already in `folder` (empty when it does not exist yet)."""
    current = root
    for level in folder.split("/") if folder else ():
        try:
            siblings = os.listdir(current)
        except (FileNotFoundError, NotADirectoryError):
            return set()
        except PermissionError:
            raise InvalidInput(f"cannot open the folder {current.relative_to(root).as_posix() or '.'}/ "
                               "(permissions)") from None
        clash = [s for s in siblings if s != level and s.casefold() == level.casefold()]
        if clash:
            raise InvalidInput(f"category level {level!r} differs only in case from {clash[0]!r}, which exists; "
                               f"use {clash[0]!r} (case-insensitive file systems hold one of them)")
        current = current / level
        if level in siblings and not current.is_dir():
            raise InvalidInput(f"{current.relative_to(root).as_posix()} is a file, not a category folder")
    try:
        return {name.casefold() for name in os.listdir(current)}
    except PermissionError:
        raise InvalidInput(f"cannot open the folder {folder}/ (permissions)") from None
    except OSError:
        return set()
