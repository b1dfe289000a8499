"""Peer systems and reference embedders for the benchmark; installed only in its own venv."""
