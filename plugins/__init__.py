"""The agent plugins memstrata ships, as data (installed as `memstrata.plugins`): `claude-code/` is a
Claude Code plugin (hooks, MCP server, skill), `openai-codex/hooks.json` the hooks `mem setup codex` installs.
`mem setup claude|codex` (memstrata/integrations/) reads them from here."""
