"""Training data for NKN: skeleton families, their clips in canonical form, bone-length variants, batches.

A *family* is one skeleton with the clips recorded (or retargeted by their authors) on it, resampled to
:data:`TRAIN_FPS` and encoded once by :class:`~.rig.CanonicalRig` (canonical local rotations ``(F, 22, 3, 3)``,
hips positions ``(F, 3)`` and online foot contacts ``(F, 4)``), cached on disk with
:mod:`skelanim.data.cache`. The default families are the shared mocap set's skeletons (see
:data:`DEFAULT_FAMILIES`): Bandai-Namco (its files of dataset 1), the CMU subject-1 skeleton (Xia clips;
the MotionBuilder skeleton of ``01_01`` as a target only, since that take is the reference of the
evaluation), the CMU 3dsMax skeleton, the 100-joint production rig (``001_01`` held out for the same
reason) and the DeepMimic humanoid. A family whose zero pose is no body pose (Bandai-Namco's, the production
rig's) has its bone frames calibrated on its skeleton file's motion (:func:`~.rig.calibrate_rig`), as
``skelanim retarget`` calibrates such a skeleton on its own motion, so that a limb's twist means the same in
every family.

Bone-length variants: the Bandai skeleton's canonical offsets with the spine, arms, hip width, thighs,
shins and feet each scaled by a factor drawn from ``U(0.7, 1.4)`` (shin and thigh drawn apart, so legs
change shape, not only size); a variant's "real" motion is Bandai motion with the hips scaled by the
leg-length ratio (their travel by the stride legs').
"""

from __future__ import annotations

import glob
import hashlib
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor

import skelanim
from skelanim.core.motion import Motion
from skelanim.data.cache import cache_dir, cache_key, read_cached, write_cached
from skelanim.errors import SkelanimError
from skelanim.ops.resample import resample
from skelanim.retarget.baselines import FEET, causal_contacts
from skelanim.retarget.rig import SLOT, CanonicalRig, calibrate_rig, canonical_locals, leg_length

__all__ = ["DEFAULT_FAMILIES", "OWN_BONE_TOLERANCE", "RESERVED_NAMES", "TRAIN_FPS", "Family", "encode_clip", "leg_length",
           "load_families", "variant_offsets"]  # fmt: skip

#: Family names the training draws of its own (``retarget.train``): a family of one's own may not take them.
RESERVED_NAMES = {"variant": "the Bandai skeleton with its bones scaled"}
#: A family of one's own: its clips' bones may differ from its skeleton file's by this share of the height.
OWN_BONE_TOLERANCE = 0.01

TRAIN_FPS = 30.0
CACHE_VERSION = 5  # 3: pelvis and chest rest frames measured apart (rig.py); 4: calibrated bone frames; 5: level feet (stance.py)
#: name -> (skeleton file, clip patterns, excluded file names), relative to the mocap folder; the skeleton file's
#: motion calibrates the family's bone frames where its zero pose is no body pose.
DEFAULT_FAMILIES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "bandai": ("bandai_namco_1/dataset-1_walk_normal_001.bvh", ("bandai_namco_1/*.bvh",), ()),
    "cmu_mb": ("cmu_cgspeed_mb/01_01.bvh", ("xia_style/*.bvh",), ()),
    "cmu_max": ("cmu_cgspeed_max/131_01.bvh", ("cmu_cgspeed_max/*.bvh",), ()),
    "xia": ("xia_style/angry_13_000.bvh", ("xia_style/*.bvh",), ()),
    "ccrig": ("cmu_iclone_ccrig/005_01.bvh", ("cmu_iclone_ccrig/*.bvh",), ("001_01.bvh",)),
    "deepmimic": ("deepmimic/humanoid3d_walk.txt", ("deepmimic/humanoid3d_*.txt",), ()),
}
_GROUPS = {
    "spine": ["spine", "spine1", "chest", "neck", "head"],
    "arms": [f"{s}_{p}" for s in "lr" for p in ("clavicle", "upperarm", "forearm", "hand")],
    "hips": ["l_upleg", "r_upleg"], "thigh": ["l_leg", "r_leg"], "shin": ["l_foot", "r_foot"], "foot": ["l_toe", "r_toe"],
}  # fmt: skip


@dataclass
class Family:
    """A skeleton and its clips in canonical form.

    Attributes
    ----------
    name : str
        Family name.
    rig : CanonicalRig
        The skeleton's rig.
    clips : list of dict
        Per clip ``local`` ``(F, 22, 3, 3)``, ``hips`` ``(F, 3)``, ``contacts`` ``(F, 4)`` (float32) and its
        file name under ``name``.
    variants : bool
        Whether bone-length variants are drawn from it.
    """

    name: str
    rig: CanonicalRig
    clips: list[dict] = field(default_factory=list)
    variants: bool = False


def encode_clip(motion: Motion, rig: CanonicalRig, fps: float = TRAIN_FPS) -> dict[str, Tensor]:
    """Canonical local rotations, hips positions (floor: the lowest foot or toe joint, moved to 0) and online
    contacts of ``motion`` at ``fps`` (float32)."""
    if abs(motion.fps - fps) > 1e-6:
        motion = resample(motion, fps)
    frames, pos = rig.encode(motion.rotations, motion.local_translations())
    pos = pos - torch.tensor([0.0, float(pos[:, list(FEET), 1].min()), 0.0], dtype=pos.dtype)
    contacts, _ = causal_contacts(pos[:, list(FEET)], fps, rig.height)
    return {"local": canonical_locals(frames).float(), "hips": pos[:, 0].float(), "contacts": contacts.float()}


def _fingerprint(rig: CanonicalRig) -> str:
    """Hex digest of what a family's rig encodes clips with: its skeleton's joint names, its canonical offsets, its
    rest bone frames (calibration included) and its rest pose (a twist about a bone moves neither of the others)."""
    digest = hashlib.sha1("\n".join(rig.skeleton.names).encode())
    for values in (rig.offsets, rig.rest_frames, torch.as_tensor(rig.rest)):
        digest.update(values.to(torch.float64).contiguous().numpy().tobytes())
    return digest.hexdigest()


def _own_rig(motion: Motion, family: CanonicalRig, path: Path) -> CanonicalRig | None:
    """The rig a clip recorded on another export of its family's skeleton is encoded with: its own, calibrated on its
    motion as the family's is (Xia's clips are on CMU subject 1's skeleton, the ``cmu_mb`` family's, under other
    joint names); ``None``, with a warning, for a skeleton of other bones or one that maps onto no canonical one."""
    difference = family.skeleton.topology_difference(motion.skeleton)
    try:
        own = calibrate_rig(CanonicalRig(motion.skeleton), motion.rotations)
    except SkelanimError as err:
        warnings.warn(f"{path}: its skeleton is not its family's ({difference}) and maps onto no canonical "
                      f"one ({err.message}); left out", stacklevel=3)  # fmt: skip
        return None
    if float((own.offsets - family.offsets).abs().max()) > 1e-3 * family.height:
        warnings.warn(f"{path}: its skeleton is not its family's ({difference}) and its bones differ; left out",
                      stacklevel=3)  # fmt: skip
        return None
    return own


def _load_clip(path: Path, rig: CanonicalRig, cache: Path | None, fingerprint: str,
               strict: bool = False) -> dict[str, Tensor] | None:  # fmt: skip
    """A family's clip, encoded with the family's rig (or, on another export of its skeleton, :func:`_own_rig`);
    cached per file and family rig (``fingerprint``, :func:`_fingerprint`; the key had been the file alone, so one
    family read another's encoding of a shared file, and what a family trained on depended on which had filled the
    cache first). ``strict`` (a family of one's own): a clip of the same joints whose bones differ from the family's
    by more than :data:`OWN_BONE_TOLERANCE` of its height is left out with a warning, as one of other joints is (it
    would be encoded on the family's bones)."""
    key = cache_key(path, fps=TRAIN_FPS, version=CACHE_VERSION, kind="retarget", rig=fingerprint,
                    **({"strict": True} if strict else {}))  # fmt: skip
    if cache is not None and (hit := read_cached(cache, key)) is not None:
        return hit[0]
    motion = skelanim.load(path)
    same = motion.skeleton.same_topology(rig.skeleton)
    if same and strict:
        lengths = [torch.as_tensor(s.offsets, dtype=torch.float64)[1:].norm(dim=-1) for s in (motion.skeleton, rig.skeleton)]
        worst = float((lengths[0] - lengths[1]).abs().max())
        if worst > OWN_BONE_TOLERANCE * rig.height:
            warnings.warn(f"{path}: its bones differ from its family's skeleton file's (by up to {worst:.4g}, "
                          f"{worst / rig.height:.1%} of its height); left out", stacklevel=3)  # fmt: skip
            return None
    own = rig if same else _own_rig(motion, rig, path)
    if own is None:
        return None
    clip = encode_clip(motion, own)
    if cache is not None:
        write_cached(cache, key, clip, {"path": str(path)})
    return clip


def load_families(
    mocap: str | os.PathLike,
    names: list[str] | None = None,
    *,
    exclude: tuple[str, ...] = (),
    use_cache: bool = True,
    max_files: int | None = None,
    extra: Mapping[str, tuple[str, tuple[str, ...], tuple[str, ...]]] | None = None,
) -> list[Family]:
    """Load the training families from the shared mocap folder (and ``extra`` ones, anywhere).

    Parameters
    ----------
    mocap : path
        The mocap folder (``../shared/data/mocap``).
    names : list of str, optional
        Families to load (default: all of :data:`DEFAULT_FAMILIES`).
    exclude : tuple of str
        File-name patterns left out of every family (held out).
    use_cache : bool
        Read and write the clip cache.
    max_files : int, optional
        At most this many clips per family (quick runs and tests), counted among the files it can read.
    extra : mapping, optional
        More families, as :data:`DEFAULT_FAMILIES` names them (skeleton file, clip patterns, excluded names), their
        paths absolute or relative to ``mocap``: a character's own rig and motion (``retarget train --family``).
        Loaded after the default ones when ``names`` is not given.

    Returns
    -------
    list of Family
    """
    root = Path(mocap)
    cache = cache_dir() if use_cache else None
    families = []
    table = {**DEFAULT_FAMILIES, **(extra or {})}
    unknown = [name for name in names or () if name not in table]
    if unknown:
        raise SkelanimError(f"unknown family {unknown[0]!r}; choose from {', '.join(table)}")
    for name, (skel_file, patterns, _) in (extra or {}).items():  # one's own, checked before any data is read
        if name in RESERVED_NAMES:
            raise SkelanimError(f"{name!r} names the training's own draw of {RESERVED_NAMES[name]}: choose another name")
        if not (root / skel_file).is_file():
            raise SkelanimError(f"the {name!r} family's skeleton file is missing", path=str(root / skel_file))
        if not any(glob.glob(str(root / p)) for p in patterns):
            raise SkelanimError(f"the {name!r} family's clips ({', '.join(patterns)}): no file matches")
        try:
            CanonicalRig(skelanim.load(root / skel_file).skeleton)
        except SkelanimError as err:
            raise SkelanimError(f"the {name!r} family's skeleton is one the joint mapping cannot read: "
                                f"{err.message.split('; a mapping file')[0]}", path=str(root / skel_file)) from None
    for name in names or list(table):
        skel_file, patterns, excluded = table[name]
        if not (root / skel_file).is_file():  # another folder than the shared mocap one: say what layout it needs
            raise SkelanimError(f"not the shared mocap folder's layout: the {name!r} family's skeleton file "
                                f"{skel_file} is missing (training reads the families of "
                                f"retarget.data.DEFAULT_FAMILIES: {', '.join(sorted({f.split('/')[0] for f, _, _ in DEFAULT_FAMILIES.values()}))})",
                                path=str(root))  # fmt: skip
        reference = skelanim.load(root / skel_file)
        rig = calibrate_rig(CanonicalRig(reference.skeleton), reference.rotations)
        files = sorted({Path(f) for p in patterns for f in glob.glob(str(root / p))})
        files = [f for f in files if f.name not in excluded and not any(Path(f).match(e) for e in exclude)]
        family = Family(name, rig, variants=name == "bandai")
        fingerprint = _fingerprint(rig)
        for path in files:
            if max_files is not None and len(family.clips) >= max_files:
                break
            clip = _load_clip(path, rig, cache, fingerprint, strict=name not in DEFAULT_FAMILIES)
            if clip is not None:  # a file the family cannot read (another skeleton) does not count against max_files
                clip["name"] = path.name  # type: ignore[assignment]  # the name rides beside the tensors
                family.clips.append(clip)
        if not family.clips and name not in DEFAULT_FAMILIES:  # each left out with a warning above
            raise SkelanimError(f"none of the {len(files)} clip(s) of the {name!r} family is on its skeleton "
                                f"({skel_file})")  # fmt: skip
        families.append(family)
    return families


def variant_offsets(offsets: Tensor, generator: torch.Generator, low: float = 0.7, high: float = 1.4) -> Tensor:
    """Canonical offsets ``(22, 3)`` with each group of bones scaled by a factor from ``U(low, high)``."""
    out = offsets.clone()
    factors: dict[str, float] = {}
    for group, slots in _GROUPS.items():
        f = low + (high - low) * float(torch.rand((), generator=generator))
        if group == "shin":
            f = min(high, max(low, factors["thigh"] * (0.8 + 0.45 * float(torch.rand((), generator=generator)))))
        factors[group] = f
        out[[SLOT[s] for s in slots]] *= f
    return out
