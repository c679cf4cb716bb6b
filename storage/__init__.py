"""The Markdown tree: entries, frontmatter, paths, atomic IO, locks, indexes, trash, config."""
