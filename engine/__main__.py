"""``python -m engine`` runs the CLI."""

import sys

from engine.cli import main

sys.exit(main())
