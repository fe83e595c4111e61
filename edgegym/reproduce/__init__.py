"""Reproductions of the papers' results: ``python -m edgegym.reproduce.ekya``."""
