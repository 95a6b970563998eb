"""What every benchmark shares: the results folder, the machine description, timing."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from memory_baseline.store import server_description

RESULTS_DIR = Path("benchmarks") / "results"


class BenchError(ValueError):
    """A benchmark was asked for with impossible parameters."""


def machine_description(conn: psycopg.Connection | None = None) -> dict[str, Any]:
    """What the numbers were measured on (the machine may have been shared: say so)."""
    memory_gb = None
    with contextlib.suppress(ValueError, OSError, AttributeError):  # not every platform has these
        memory_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    described: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "memory_gb": memory_gb,
        "python": platform.python_version(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    if conn is not None:
        described.update(server_description(conn))
    return described


def write_result(name: str, document: dict[str, Any], out_dir: str | Path = RESULTS_DIR,
                 figure: Callable[[dict[str, Any], Any], Any] | None = None) -> Path:
    """Write `<out_dir>/<name>.json` and, given a figure function, `<name>.png`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / f"{name}.json"
    json_path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    plot = figure
    if plot is not None:
        import matplotlib

        # A script has no display; notebooks keep their own backend.
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure = plot(document, plt)
        figure.savefig(out / f"{name}.png", dpi=120, bbox_inches="tight")
        plt.close(figure)
        document["figure"] = str(out / f"{name}.png")
    return json_path




def timed(function: Callable[[], Any]) -> tuple[Any, float]:
    """The function's value and its wall time in milliseconds."""
    started = time.perf_counter()
    value = function()
    return value, (time.perf_counter() - started) * 1000


def int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise BenchError(f"expected comma-separated integers, got {text!r}") from None
    if not values:
        raise BenchError("expected at least one integer")
    return values
