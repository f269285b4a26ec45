"""`python -m slicectl` runs the CLI."""

from slicectl.cli import main

raise SystemExit(main())
