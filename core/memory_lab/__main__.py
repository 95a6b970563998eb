"""`python -m memory_lab` is `memory-lab`."""

import sys

from .cli import main

sys.exit(main())
