"""`python -m memory_lab` is `memory-lab`."""

import sys

from memory_lab.cli import main

sys.exit(main())
