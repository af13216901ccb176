"""Synthetic BVH text for the reader/writer tests: a 4-joint skeleton (two End Sites) with any channel
layout. ``tests/helpers`` is put on ``sys.path`` by ``tests/conftest.py``."""

from __future__ import annotations

import numpy as np

JOINTS = [  # name, parent, offset
    ("Hips", -1, (1.0, 2.0, 3.0)),
    ("Spine", 0, (0.0, 10.0, 0.0)),
    ("Head", 1, (0.0, 10.0, 0.0)),
    ("LeftLeg", 0, (5.0, -10.0, 0.0)),
]
END_SITES = {2: (0.0, 5.0, 0.0), 3: (0.0, -10.0, 0.0)}


def make_bvh(channels: list[list[str]], values: np.ndarray, *, frame_time: str = "0.0333333",
              end_label: str = "End Site", newline: str = "\n", indent: str = "\t") -> str:
    """A small 4-joint BVH with the given channel lists and ``(F, C)`` values."""
    lines = ["HIERARCHY"]
    depth = {-1: -1}
    order = [0, 1, 2, 3]
    open_stack: list[int] = []
    for j in order:
        name, parent, offset = JOINTS[j]
        while open_stack and open_stack[-1] != parent:
            k = open_stack.pop()
            lines.append(indent * depth[k] + "}")
        depth[j] = depth[parent] + 1
        ind = indent * depth[j]
        lines += [f"{ind}{'ROOT' if parent < 0 else 'JOINT'} {name}", ind + "{",
                  f"{ind}{indent}OFFSET {' '.join(map(str, offset))}"]
        if channels[j] is not None:
            lines.append(f"{ind}{indent}CHANNELS {len(channels[j])} {' '.join(channels[j])}".rstrip())
        if j in END_SITES:
            lines += [f"{ind}{indent}{end_label}", f"{ind}{indent}{{",
                      f"{ind}{indent * 2}OFFSET {' '.join(map(str, END_SITES[j]))}", f"{ind}{indent}}}"]
        open_stack.append(j)
    while open_stack:
        lines.append(indent * depth[open_stack.pop()] + "}")
    lines += ["MOTION", f"Frames: {len(values)}", f"Frame Time: {frame_time}"]
    lines += [" ".join(f"{v:.6f}" for v in row) for row in values]
    return newline.join(lines) + newline


ROT = ["Zrotation", "Xrotation", "Yrotation"]
POS = ["Xposition", "Yposition", "Zposition"]
STD = [POS + ROT, ROT, ROT, ROT]


def random_values(channels: list[list[str]], frames: int = 5, seed: int = 0) -> np.ndarray:
    """``(frames, C)`` random channel values in [-80, 80], rounded to 4 decimals (exact in the BVH text)."""
    n = sum(len(c or []) for c in channels)
    return np.round(np.random.default_rng(seed).uniform(-80, 80, size=(frames, n)), 4)


#: A BVH text of two figures (two ROOTs): ``{a}`` with an arm, and ``{b}``, a bare moving point; fill with
#: ``.format(a=..., b=...)``.
TWO_FIGURES = """HIERARCHY
ROOT {a}
{{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT {a}_arm
  {{
    OFFSET 0 10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {{
      OFFSET 0 5 0
    }}
  }}
}}
ROOT {b}
{{
  OFFSET 1 0 0
  CHANNELS 3 Xposition Yposition Zposition
}}
MOTION
Frames: 2
Frame Time: 0.04
1 2 3 10 20 30 5 6 7 100 0 0
1 2 3 11 21 31 5 6 7 101 0 0
"""


def bvh_parts(text: str) -> tuple[str, str, list[str]]:
    """The hierarchy (without ``HIERARCHY``), the frame time line and the frame lines of a BVH text."""
    head, _, motion = text.partition("MOTION")
    lines = [ln for ln in motion.splitlines() if ln.strip()]
    return head.replace("HIERARCHY", "", 1), lines[1], lines[2:]


def two_figures(a: str, b: str, frames: int) -> str:
    """One file holding figure ``a`` then figure ``b``: their hierarchies one after the other, each frame line the
    two files' lines joined (the first ``frames``)."""
    (head_a, time_a, rows_a), (head_b, _, rows_b) = bvh_parts(a), bvh_parts(b)
    rows = [f"{x.strip()} {y.strip()}" for x, y in zip(rows_a[:frames], rows_b[:frames], strict=True)]
    return "HIERARCHY\n" + head_a + head_b + f"MOTION\nFrames: {frames}\n{time_a}\n" + "\n".join(rows) + "\n"
