"""`python -m nbs_tui` runs the same command line as `nbs-tui`."""

from nbs_tui.cli import main

raise SystemExit(main())
