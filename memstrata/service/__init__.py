"""The warm local service: its stdlib client (client.py), server (server.py), pool of warm trees
(pool.py) and per-call thread state (threads.py). Nothing is imported here, so the client stays light."""
