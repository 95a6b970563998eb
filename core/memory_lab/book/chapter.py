"""What every chapter does before its study: one call, `setup(globals())`, after the parameters cell.

A chapter's first code cell is its `parameters` cell (Papermill replaces it); the
second imports what the chapter reads with and calls `setup`, which returns the
parameter record for the run manifest and a database connection:

    PARAMETERS, conn = chapter.setup(globals())

The parameters are the plain values (None, numbers, strings, lists and dicts of
those) the notebook has defined when `setup` first runs, which right after the
parameters cell is exactly that cell's names, as Papermill set them. Running the
setup cell again in JupyterLab keeps the names of the first call and takes their
current values, so the record never picks up a study's later variables.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import MutableMapping
from typing import Any

import psycopg

# tqdm.auto warns once per process when ipywidgets is absent; plain-text progress is fine.
warnings.filterwarnings("ignore", message="IProgress not found")

RECORD = "PARAMETERS"


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def parameters_of(namespace: MutableMapping[str, Any]) -> dict[str, Any]:
    """The chapter's parameters as now set in `namespace` (see the module docstring)."""
    previous = namespace.get(RECORD)
    if isinstance(previous, dict):
        return {name: namespace[name] for name in previous if name in namespace}
    hidden = set()
    with contextlib.suppress(ImportError):  # outside IPython nothing is hidden
        from IPython import get_ipython

        hidden = set(getattr(get_ipython(), "user_ns_hidden", {}) or {})
    return {name: value for name, value in namespace.items()
            if not name.startswith("_") and name not in hidden and _plain(value)}


def setup(namespace: MutableMapping[str, Any]) -> tuple[dict[str, Any], psycopg.Connection]:
    """Inline figures, the parameter record (also stored as `PARAMETERS`), and a connection."""
    with contextlib.suppress(ImportError):  # outside IPython there is no inline backend to set
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            shell.run_line_magic("matplotlib", "inline")
    from memory_baseline.server import connect

    parameters = parameters_of(namespace)
    namespace[RECORD] = parameters
    return parameters, connect()
