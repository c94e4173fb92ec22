"""`python -m tui` runs the CLI."""

from gpuaudit.tui.cli.entry import main

raise SystemExit(main())
