"""Front ends: the Textual app, the CLI and the headless modes. Importing this package imports no Textual."""
