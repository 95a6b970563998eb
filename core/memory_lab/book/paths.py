"""Where the book lives: the one folder relative paths in chapters and profiles are read from.

The lab is a package that may be installed anywhere, so it never looks at its own
location. The book root is, in order: the folder named by `MEMORY_LAB_ROOT`; the
nearest folder at or above the current directory holding the book's `_config.yml`
and `_toc.yml` (Papermill runs a chapter in `book/chapters/`, so the kernel finds
the checkout it was started from); otherwise the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_ENV = "MEMORY_LAB_ROOT"
BOOK_MARKERS = ("_config.yml", "_toc.yml")


def find_book_root(start: str | Path | None = None) -> Path | None:
    """The nearest folder at or above `start` (default: the cwd) holding `_config.yml` and `_toc.yml`."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if all((folder / marker).is_file() for marker in BOOK_MARKERS):
            return folder
    return None


def project_root() -> Path:
    """The book root (see the module docstring); read afresh on every call."""
    named = os.environ.get(ROOT_ENV)
    if named:
        return Path(named).expanduser().resolve()
    return find_book_root() or Path.cwd().resolve()
