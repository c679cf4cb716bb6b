"""Extract the notes benchmark corpora from fetched Git mirrors into plain folders of Markdown notes.

    python bench/notes_corpora.py                       # mirrors under /work/.mirror, out to /tmp/notes-corpora
    python bench/notes_corpora.py --mirror til=/path/to/jbranchaud+til/repo --out DIR

Each corpus is a modest, fixed subset of a public repository's Markdown (read with `git show`, no
work tree), chosen for different kinds of notes:

- til:     jbranchaud/til, a personal "today I learned" vault: short notes (0.3-2 KB) in topic folders
           (git, python, tmux, mac);
- rustbook: rust-lang/book, a project's docs folder: long chapters (2-60 KB) with deep headings, in its src/ folder;
- vuezh:   vuejs-translations/docs-zh-cn, Chinese docs in nested folders (guide/essentials/...),
           frontmatter on some pages;
- vault:   wrewsama/obsidian-vault, an Obsidian personal-knowledge vault: short bullet notes in
           `Main Notes/` and `Source Materials/{Books,Videos,Websites,Papers}/`, each opening with a
           `Tags:` list of `[[wikilinks]]` to tag notes (empty files, left out) and linking other notes
           in its text; notes past 40 KB (pasted drawings) are left out;
- zettel:  digitalyoshixi/zettelkasten, `content/Network/`: a personal Zettelkasten (Obsidian) of short
           networking notes (0.3-18 KB, median ~0.5 KB), every one with YAML frontmatter `tags:` and
           most with `aliases:` (the acronym or other name a note goes by: ARP, DHCP, "MAC Address"),
           linked by `[[Title|alias]]` wikilinks;
- weekly:  ruanyf/weekly, `docs/issue-*.md`: a Chinese weekly tech newsletter in Markdown (科技爱好者周刊,
           issues 1-418, 9 MB; ~22 KB an issue: an opening essay, then news, articles, tools, resources,
           quotes, each a short paragraph with links and images; English product and project names inside
           Chinese sentences throughout) at commit cf5e367;
- advjava: doocs/advanced-java, `docs/`: a Chinese notes collection on back-end engineering (Redis, message
           queues, Elasticsearch, Dubbo, sharding, Hystrix, microservices), interview-question notes of
           1-33 KB with headings, English terms in every paragraph; its folder READMEs (listings) and
           `extra-page/` (promotion) are left out; at commit efb95dd.

The files are not committed (only bench/notes/<corpus>.jsonl, the questions, are); the subset is
defined here so a rerun from the same mirror gives the same notes. Paths in the question files are
relative to the corpus folder.
"""
from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

MIRRORS = Path("/work/.mirror")
CORPORA = {
    # name: (mirror folder, path prefix in the repo, folders kept (None: all), prefix stripped)
    "til": ("jbranchaud+til", "", ("git/", "python/", "tmux/", "mac/"), ""),
    "rustbook": ("rust-lang+book", "src/", None, ""),  # kept in src/: adopt takes notes in folders
    "vuezh": ("vuejs-translations+docs-zh-cn", "src/", ("src/about/", "src/api/", "src/guide/", "src/glossary/",
                                                        "src/tutorial/"), "src/"),
    "vault": ("wrewsama+obsidian-vault", "", ("Main Notes/", "Source Materials/"), ""),
    "zettel": ("digitalyoshixi+zettelkasten", "content/Network/", ("content/Network/",), "content/"),
    "weekly": ("ruanyf+weekly", "docs/", ("docs/issue-",), "docs/"),
    "advjava": ("doocs+advanced-java", "docs/", ("docs/big-data/", "docs/distributed-system/",
                                                 "docs/high-availability/", "docs/high-concurrency/",
                                                 "docs/micro-services/"), "docs/"),
}
MAX_BYTES = {"vault": 40_000}  # its largest notes are pasted Excalidraw drawings, not text
MIN_BYTES = 300  # stubs (index pages, redirects) are no notes
SKIP = ("SUMMARY.md", "title-page.md", "PLEADE_DO_NOT_TRANSLATE.md", "index.md")  # index.md: a name the tree keeps for itself
SKIP_IN = {"advjava": ("README.md",)}  # a folder's listing of its notes, no note


def files(git_dir: Path, prefix: str, keep, max_bytes: int | None = None, skip=()) -> list[tuple[str, int]]:
    # -z: a path with a quote or a non-ASCII letter comes unquoted
    out = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-l", "-z", "HEAD", "--", prefix or "."],
                         check=True, capture_output=True, text=True).stdout
    found = []
    for line in filter(None, out.split("\0")):
        meta, path = line.split("\t", 1)
        size = meta.split()[3]
        if not path.endswith(".md") or size == "-" or int(size) < MIN_BYTES or path.rsplit("/", 1)[-1] in SKIP + tuple(skip):
            continue
        if max_bytes and int(size) > max_bytes:
            continue
        if "/" not in path.removeprefix(prefix) and not prefix and keep:
            continue  # a repository's top-level README and the like
        if keep and not path.startswith(tuple(keep)):
            continue
        found.append((path, int(size)))
    return sorted(found)


def extract(name: str, git_dir: Path, out: Path) -> int:
    _, prefix, keep, strip = CORPORA[name]
    target = out / name
    target.mkdir(parents=True, exist_ok=True)
    n = 0
    for path, _ in files(git_dir, prefix, keep, MAX_BYTES.get(name), SKIP_IN.get(name, ())):
        text = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"HEAD:{path}"], check=True,
                              capture_output=True).stdout
        dest = target / path.removeprefix(strip)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(text)
        n += 1
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", action="append", default=[], metavar="NAME=GIT_DIR")
    ap.add_argument("--out", default="/tmp/notes-corpora")
    args = ap.parse_args(argv)
    given = dict(m.split("=", 1) for m in args.mirror)
    for name, (folder, *_rest) in CORPORA.items():
        git_dir = Path(given.get(name, MIRRORS / folder / "repo"))
        if not git_dir.exists():
            print(f"{name}: no mirror at {git_dir} (fetch github:{folder.replace('+', '/')})")
            continue
        print(f"{name}: {extract(name, git_dir, Path(args.out))} notes -> {Path(args.out) / name}")


if __name__ == "__main__":
    main()
