"""Renderers shared by the CLI and the app (Rich text only, no Textual)."""
