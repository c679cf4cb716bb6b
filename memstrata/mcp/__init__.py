"""The MCP server: the engine's operations as tools over stdio (server.py)."""
