"""``python -m twolayer.cli``: the ``twolayer`` command."""

import sys

from twolayer.cli import main

sys.exit(main())
