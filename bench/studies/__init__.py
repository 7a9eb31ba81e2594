"""The paper's studies, measured: each one command ending in a table and a figure in bench/results."""
