"""``python -m ace_core``: the command line of :mod:`ace_core.cli`."""

from ace_core.cli import main

raise SystemExit(main())
