"""The runner's built-in demo: learn to reverse random sequences with a tiny encoder-decoder.

Small enough to train in seconds, so the runner's tests (learning, exact resume, accumulation,
DDP) use it; and a template for writing a new task.
"""
