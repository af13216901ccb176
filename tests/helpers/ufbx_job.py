"""Read an FBX with ufbx (the FBX loader Godot imports with; Python bindings from PyPI) and write the world position
of every bone node at every frame of its first animation stack to an ``.npz``: ``names`` (J,), ``heads`` (F, J, 3)
in the file's units and axes, ``node_names`` (every node's), ``fps`` (the file's frame rate), ``key_times`` (the first curve's key times, seconds),
``unit_meters``, ``stacks`` (every animation stack's name: the clips an engine lists). Run in a subprocess (``tests/helpers/ufbx_peer.py``): the bindings (0.0.5) crash while freeing an
object, so none is: they are held until this process ends with ``os._exit`` once the file is written.

Usage: ``python ufbx_job.py FILE.fbx OUT.npz``
"""

from __future__ import annotations

import gc
import os
import sys

import numpy as np
import ufbx


def main(path: str, out: str) -> list:
    """Write ``out``; return every ufbx object made, for the caller to hold until ``os._exit``."""
    gc.disable()  # the bindings crash when their objects are freed: none is, the process ends with os._exit
    scene = ufbx.load_file(path)
    fps = float(scene.settings.frames_per_second)
    stack = scene.anim_stacks[0]
    frames = round((stack.time_end - stack.time_begin) * fps) + 1
    nodes = list(scene.nodes)
    bones = [node for node in nodes if node.bone is not None]
    heads, made = [], [scene, nodes]
    for frame in range(frames):
        posed = scene.evaluate(stack.anim, stack.time_begin + frame / fps)
        made.append(posed)
        by_name = {node.name: node for node in posed.nodes}
        heads.append([tuple(by_name[bone.name].node_to_world.c3) for bone in bones])
    keys = [key.time for key in scene.anim_curves[0].keyframes]
    np.savez(out, names=np.array([bone.name for bone in bones]), heads=np.array(heads), fps=fps,
             node_names=np.array([node.name for node in nodes]), stacks=np.array([s.name for s in scene.anim_stacks]),
             key_times=np.array(keys), unit_meters=float(scene.settings.unit_meters))  # fmt: skip
    return made


if __name__ == "__main__":
    held = main(sys.argv[1], sys.argv[2])
    sys.stdout.flush()
    os._exit(0)
