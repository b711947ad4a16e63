"""``python -m engine`` runs the CLI."""

import sys

from engine.faces.cli import main

sys.exit(main())
