"""Audit snapshots: schema, store, migration and diff. Never imports Textual."""
