"""`python -m memory_lab.bench NAME`."""

from memory_lab.bench import main

raise SystemExit(main())
