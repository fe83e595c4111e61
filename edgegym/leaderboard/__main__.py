"""``python -m edgegym.leaderboard``."""

import sys

from edgegym.leaderboard.cli import main

sys.exit(main())
