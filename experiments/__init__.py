"""Experiments that train models: the measured comparison of position encodings (compare.py)."""
