"""A config.md pulled from the remote: the settings this machine holds back, put back into config.md."""
from __future__ import annotations

from pathlib import Path

from memstrata.features.gitrepo import TRAILER_MACHINE, Git
from memstrata.scoring.pulled_settings import UNSET, held_back, raised_here
from memstrata.storage import codec, layout, own_settings
from memstrata.storage.config import CONFIG_FILE, Settings, changed_settings, config_prose, render_config
from memstrata.storage.atomic import atomic_write_text


def guard_pulled_config(git: Git, root: Path, before: str | None, machine: str | None = None) -> tuple[list[dict], list[dict]]:
    """Hold back what a pull brought into config.md that must not apply here (scoring.pulled_settings);
    config.md is rewritten with this machine's values for those keys. Returns (one row per key held
    back, one row per setting the pull changed here), so the user hears of both."""
    from memstrata.models.locate import is_available

    config = layout.at(root, CONFIG_FILE)  # a vault's `.memstrata/config.md`: its own config.md is a note
    ours_text = git.show(f"{before}:{config}") if before is not None else None
    if ours_text is None:
        return [], []
    try:
        ours = dict(codec.split_frontmatter(ours_text)[0])
    except Exception:  # noqa: BLE001 - our own file unreadable at HEAD: nothing to compare with
        return [], []
    try:
        pulled = changed_settings(root)
    except Exception:  # noqa: BLE001 - the pulled file cannot be read at all: ours comes back whole
        atomic_write_text(Path(root) / config, ours_text, root=root)
        return [{"setting": "config.md", "kept": None, "why": "the pulled config.md cannot be read: this machine's "
                 "file is kept"}], []
    verdicts = held_back(ours, pulled, is_available)
    kept_own = keep_own_values(git, root, before, machine, ours, pulled, verdicts)
    known = set(Settings.field_names())
    changed = [{"setting": key, "from": ours.get(key), "to": pulled.get(key)}
               for key in sorted((set(ours) | set(pulled)) & known)
               if ours.get(key) != pulled.get(key) and key not in verdicts and key not in kept_own]
    held_here = [{"setting": key, "kept": mine, "why": f"this machine set it itself, so it stays here only "
                  f"(.git/{own_settings.OWN_FILE}); config.md keeps the team's "
                  f"{'default' if pulled.get(key) is None else pulled.get(key)}"}
                 for key, mine in sorted(kept_own.items())]
    if not verdicts:
        return held_here, changed
    for key, (mine, _) in verdicts.items():
        if mine is UNSET:
            pulled.pop(key, None)
        else:
            pulled[key] = mine
    atomic_write_text(Path(root) / config, render_config(pulled, config_prose(root)), root=root)
    return [{"setting": key, "kept": None if mine is UNSET else mine, "why": why}
            for key, (mine, why) in verdicts.items()] + held_here, changed


def keep_own_values(git: Git, root: Path, before: str, machine: str | None, ours: dict, pulled: dict,
                    verdicts: dict) -> dict:
    """A lower forget_after_days / trash_retention_days this machine set itself, which a pull raises (a
    peer held it back and pushed its own: an echo), stays this machine's own value (storage/own_settings.py,
    never committed); config.md takes the pulled value. Set by another machine (the last commit changing
    its line names another machine), the pulled value applies. Returns {key: value kept}."""
    kept = {}
    config = layout.at(root, CONFIG_FILE)
    for key, mine in raised_here(ours, pulled).items():
        if key in verdicts or machine is None:
            continue
        by = git.out("log", "-n1", f"--format=%(trailers:key={TRAILER_MACHINE},valueonly)", f"-G^{key}:",
                     before, "--", config, check=False)
        if by.strip() == machine and own_settings.keep(root, key, mine):
            kept[key] = mine
    return kept
