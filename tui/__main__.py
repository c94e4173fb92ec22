"""`python -m tui` runs the CLI."""

from gpuaudit.tui.cli import main

raise SystemExit(main())
