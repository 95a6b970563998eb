"""Tables and figures in the book: pandas frames that scroll, figures and captions that name their run."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_lab.studies.setup import CAPTION_SOURCE, display_path, run_caption  # noqa: F401  (captions live with run naming)

# -- tables and figures in the book ---------------------------------------------------------


def table_frame(rows: Sequence[Mapping[str, Any]] | Any, columns: Sequence[str] | None = None) -> Any:
    """Rows as a pandas DataFrame of the values as they are (no dtype coercion).

    Columns are the union of the rows' keys in first-seen order, or `columns`. The
    frame holds Python objects, so an integer column with a gap stays integers and
    a missing value stays None, and the table shows each value as it was computed.
    A DataFrame passed in is returned as it is (restricted to `columns`).
    """
    import pandas as pd

    if isinstance(rows, pd.DataFrame):
        return rows[list(columns)] if columns else rows
    cols = list(columns) if columns else list(dict.fromkeys(k for row in rows for k in row))
    return pd.DataFrame([[row.get(c) for c in cols] for row in rows], columns=cols, dtype=object)


def pivot(rows: Sequence[Mapping[str, Any]] | Any, index: str | Sequence[str], columns: str,
          values: str, *, row_order: Sequence[Any] | None = None,
          column_order: Sequence[str] | None = None) -> Any:
    """A long table turned the way one reads it: one row per `index`, one column per `columns` value.

    pandas does the pivot (each cell is the one value of its row and column; a
    duplicate is an error, not an average). Rows and columns keep the order in which
    they first appear; `row_order` gives exactly the rows to show (one with no
    values shows "–"), `column_order` the columns to put first.
    """
    frame = table_frame(rows)
    keys = [index] if isinstance(index, str) else list(index)
    wide = frame.pivot(index=keys, columns=columns, values=values)
    first_rows = list(dict.fromkeys(tuple(r) if len(keys) > 1 else r[0]
                                    for r in frame[keys].itertuples(index=False)))
    seen = list(dict.fromkeys(frame[columns]))
    named = [c for c in (column_order or []) if c in seen]
    wide = wide.reindex(index=list(row_order) if row_order is not None else first_rows,
                        columns=named + [c for c in seen if c not in named])
    wide.columns.name = None
    return wide.astype(object).where(wide.notna(), None)


def table_html(frame: Any, digits: int = 3) -> str:
    """A DataFrame as an HTML table that scrolls sideways instead of being clipped.

    `Styler.format` shows floats with `digits` decimals, integers and text as they
    are, and a missing value as "–". A named index (the rows of a pivot) becomes the
    leading columns, so the table has one header row; a plain 0..n-1 index is not
    shown. Styler's random ids and style block are left out (`exclude_styles`), so
    the same table renders to the same HTML (nbval compares the executed notebooks
    output by output); the book's stylesheet (`_static/tables.css`) styles the wrapper.
    """
    if any(name is not None for name in frame.index.names):
        frame = frame.reset_index()
    styler = frame.style.format(precision=digits, na_rep="–", escape="html").hide(axis="index")
    return f'<div class="memory-table-scroll">\n{styler.to_html(exclude_styles=True)}</div>'


def show_table(rows: Sequence[Mapping[str, Any]] | Any, caption: str,
               columns: Sequence[str] | None = None, digits: int = 3) -> None:
    """Display rows (or a DataFrame) as a scrolling HTML table, with its caption under it.

    The caption is Markdown of its own, so it names its run directory the way every
    caption does (`CAPTION_SOURCE`), which `book.runs_named` reads back.
    """
    from IPython.display import HTML, Markdown, display

    frame = table_frame(rows, columns)
    if frame.empty:
        display(Markdown(f"*(no rows)*\n\n*{caption}*"))
        return
    display(HTML(table_html(frame, digits)))
    display(Markdown(f"*{caption}*"))


def show_figure(fig: Any, caption: str, *, run_name: str, save_as: Path | None = None) -> None:
    """Display a figure with the run that produced it written on it and under it.

    The run name is drawn into the image itself, so a figure copied out of the book
    still says where it came from; `save_as` keeps a PNG copy in the run directory.
    """
    from IPython.display import Markdown, display

    fig.text(0.005, 0.005, f"run: {run_name}", fontsize=7, color="0.35", ha="left", va="bottom")
    if save_as is not None:
        fig.savefig(save_as, dpi=110, bbox_inches="tight")
    display(fig)
    import matplotlib.pyplot as plt

    plt.close(fig)
    display(Markdown(f"*{caption}*"))


# How every caption names its run; `book.runs_named` reads it back to publish those runs.
def summarise(rows: Sequence[Mapping[str, Any]], by: Sequence[str], metrics: Sequence[str],
              *, digits: int = 3) -> list[dict[str, Any]]:
    """Mean of each metric per group (None values are left out of a mean), plus a count."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row.get(k) for k in by), []).append(row)
    out = []
    for key, members in groups.items():
        summary: dict[str, Any] = dict(zip(by, key, strict=True))
        summary["n"] = len(members)
        for metric in metrics:
            values = [float(m[metric]) for m in members if m.get(metric) is not None]
            summary[metric] = round(statistics.fmean(values), digits) if values else None
        out.append(summary)
    return out
