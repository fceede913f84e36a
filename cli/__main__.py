"""`python -m ocm_rollout.cli`: the same as the `ocm-rollout` command."""

import sys

from ocm_rollout.cli.main import main

sys.exit(main())
