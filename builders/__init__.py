"""Benchmark-family builders (``hetbench.builders``): each composes table -> partition -> publish."""
