"""What the benchmarks share: the repository's ``src`` first on the path (they run the checkout's code), the
shared mocap folder, ``$SKELANIM_DATA`` or ``<repo>/../shared/data/mocap`` (a relative setting is read from the
repository's root), and the BVH file the BVH benchmarks read by default."""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))


def mocap_dir() -> Path:
    """The shared mocap folder (it may not exist: each benchmark says so, :func:`require_data`)."""
    configured = os.environ.get("SKELANIM_DATA")
    path = Path(configured).expanduser() if configured else REPO.parent / "shared" / "data" / "mocap"
    return path if path.is_absolute() else (REPO / path).resolve()


def default_file() -> Path:
    """``cmu_cgspeed_mb/01_01.bvh`` (2752 frames, 31 joints, 2 MB) in :func:`mocap_dir`: what ``bvh_io.py`` and
    ``bvh_write.py`` read unless given ``--file``."""
    return mocap_dir() / "cmu_cgspeed_mb" / "01_01.bvh"


def require_data(*paths: Path | str) -> None:
    """Exit with status 2 and one line naming the first of ``paths`` (files, folders or glob patterns) that matches
    nothing: a benchmark without its data (``SKELANIM_DATA`` unset on a machine without the shared folder) had ended
    in a traceback."""
    for path in map(Path, paths):
        found = path.exists() or (glob.has_magic(str(path)) and any(glob.iglob(str(path))))
        if not found:
            print(f"error: {path}: no such file (set SKELANIM_DATA to the mocap folder)", file=sys.stderr)
            raise SystemExit(2)
