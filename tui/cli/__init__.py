"""Text front ends (no Textual): argument parsing, headless modes, subcommands. Entry: entry.main."""
