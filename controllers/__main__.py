"""Allow `python -m controllers`."""

import sys

from controllers.cli import main

sys.exit(main())
