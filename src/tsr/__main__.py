"""`python -m tsr`: the command line."""

import sys

from .interface.cli import main

sys.exit(main())
