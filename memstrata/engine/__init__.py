"""The engine of a tree: shared state (state.py), the save path (save.py, index.py), entry operations (entries.py), input rules (inputs.py)."""
