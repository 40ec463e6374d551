"""`python -m gridwms.cli`: the same as the `gridwms` command."""

import sys

from gridwms.cli import main

sys.exit(main())
