"""Benchmarks. `make bench` runs them all; each writes its section of docs/benchmarks.md."""
