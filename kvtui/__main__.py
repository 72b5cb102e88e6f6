"""`python -m kvtui` does exactly what the `kvtui` command does."""

from kvtui.cli import main

raise SystemExit(main())
