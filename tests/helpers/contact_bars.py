"""Contact bars of a plot read back, and the runs they should show found by a plain loop (tests of
``viz.plots.plot_contacts``)."""

from __future__ import annotations

import numpy as np


def flag_runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """``(first, past-last)`` frame of each run of True, by a plain loop."""
    out, start = [], None
    for k, flag in enumerate([*map(bool, flags), False]):
        if flag and start is None:
            start = k
        elif not flag and start is not None:
            out.append((start, k))
            start = None
    return out


def bar_spans(ax) -> list[list[tuple[float, float]]]:
    """Per bar row of ``ax`` (a ``broken_barh`` collection), the sorted ``(start, end)`` of its bars in seconds."""
    rows = [c for c in ax.collections if len(c.get_paths())]
    return [sorted((float(p.vertices[:, 0].min()), float(p.vertices[:, 0].max())) for p in c.get_paths()) for c in rows]
