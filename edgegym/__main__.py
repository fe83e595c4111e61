"""``python -m edgegym`` is the ``edgegym`` command line."""

from edgegym.cli import main

raise SystemExit(main())
