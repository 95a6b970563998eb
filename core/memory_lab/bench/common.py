"""What every benchmark shares: the results folder, the machine description, timing."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_lab.runs import code_version, machine_description  # noqa: F401  (the one machine description)

RESULTS_DIR = Path("benchmarks") / "results"


class BenchError(ValueError):
    """A benchmark was asked for with impossible parameters."""


def write_result(name: str, document: dict[str, Any], out_dir: str | Path = RESULTS_DIR,
                 figure: Callable[[dict[str, Any], Any], Any] | None = None) -> Path:
    """Write `<out_dir>/<name>.json` and, given a figure function, `<name>.png`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    document.setdefault("code_version", code_version())
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
