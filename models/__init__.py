"""Embedding model, fast query path and extractive summaries; never touches files of the tree."""
