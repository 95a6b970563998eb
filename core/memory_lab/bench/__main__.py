"""`python -m memory_lab.bench NAME`."""

from . import main

raise SystemExit(main())
