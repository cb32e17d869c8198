"""Textual widgets, one per file; app.py wires them together."""
