"""Themes and stylesheets of the Textual app (look, not logic)."""
