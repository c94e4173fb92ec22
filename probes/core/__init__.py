"""The audit engine: models, declarations, transports and the runner. Never imports Textual."""
