"""zoo: the Transformer family as clean, fast, tested PyTorch."""
