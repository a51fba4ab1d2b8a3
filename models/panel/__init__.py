"""Frozen models of the benchmark panel (package data)."""
