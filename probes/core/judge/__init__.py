"""Judging: the checks framework, shared combiners, the action plan."""
