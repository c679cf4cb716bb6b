"""The warm local service: its stdlib client (client.py, connection.py), server (server.py), entry
points (control.py), process log and facts (process.py), pool of warm trees (pool.py) and per-call
thread state (threads.py). Nothing is imported here, so the client stays light."""
