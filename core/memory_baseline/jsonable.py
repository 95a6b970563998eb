"""One conversion of results to JSON types, for the CLI's `--json` and the lab's records.

Reports, traces and manifests hold tuples, paths, datetimes, numpy values and
dataclasses (most with a `to_dict`). The CLI prints them, run manifests and
study records store them; one function spells each type the same way in all of
them. A caller may show paths its own way (the lab writes them relative to the
book root).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path
from typing import Any


def jsonable(value: Any, *, path: Callable[[Path], str] = str) -> Any:
    """`value` in JSON types: what `to_dict()` returns, mappings with string keys, sequences
    and sets as lists, paths as `path(p)`, dates in ISO format, other dataclasses as dicts,
    numpy values as Python numbers and lists. Anything else is returned as it is."""
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict(), path=path)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, path=path) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v, path=path) for v in value]
    if isinstance(value, Path):
        return path(value)
    if isinstance(value, date):  # datetimes too
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value), path=path)
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    return value
