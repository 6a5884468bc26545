"""Benchmark figures for the site (placeholder until the benchmark work lands)."""
