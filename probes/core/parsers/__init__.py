"""Parsers for command families shared by several probes (one owner per module)."""
