"""Decode roofline: how far single-stream decode is from what the hardware allows (PROBES.md §13)."""
