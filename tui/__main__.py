"""`python -m tui` runs the CLI."""

from tui.cli import main

raise SystemExit(main())
