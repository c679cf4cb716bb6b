"""LanceDB index of the tree, sync, hybrid search, fusion and the grep/index fallbacks."""
