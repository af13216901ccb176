"""Blender's side of :mod:`skelanim.io.fbx`: run by Blender (``blender --background --factory-startup --python
_blender_fbx.py -- ...``) or by a Python with Blender's ``bpy`` module (``python _blender_fbx.py -- ...``); it imports
nothing of skelanim.

    ... -- read FBX GLB INFO    an FBX's armature and its animation as a GLB; INFO (JSON): the scene's frame rate
    ... -- write BVH FBX SCALE  a BVH (Y up) as an FBX of its armature: imported at SCALE (metres per unit) turned to
                                Blender's Z up, exported baked at every frame (Simplify 0), no leaf bones, FBX units
                                scale, forward -Z, up Y (docs/engines.md's settings)

A failure is one line on stderr, ``skelanim-blender-error: ...``, and exit status 3.
"""

from __future__ import annotations

import json
import os
import sys

import bpy  # type: ignore[import-not-found]


def fail(message: str) -> None:
    sys.stderr.write(f"skelanim-blender-error: {message}\n")
    sys.stderr.flush()
    os._exit(3)


def only_armature() -> bpy.types.Object:
    armatures = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    if len(armatures) != 1:
        fail(f"{len(armatures)} armatures in the scene; one is read (a skeleton with its animation)")
    for other in [o for o in bpy.context.scene.objects if o.type != "ARMATURE" and o.parent is None]:
        if other is not armatures[0]:
            bpy.data.objects.remove(other, do_unlink=True)  # meshes, cameras, lights: only the skeleton is read
    return armatures[0]


def frame_range(armature: bpy.types.Object) -> tuple[int, int] | None:
    """The armature's action's whole frames (keys at float seconds land a hair off them), or ``None`` unanimated."""
    if armature.animation_data is None or armature.animation_data.action is None:
        return None
    action = armature.animation_data.action
    start, end = action.frame_range
    first, last = round(start), round(end)
    action.use_frame_range, action.frame_start, action.frame_end = True, first, last
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = first, last
    return first, last


def read(fbx: str, glb: str, info: str) -> None:
    try:
        bpy.ops.import_scene.fbx(filepath=fbx, use_anim=True)
    except RuntimeError as exc:  # Blender's importer reports a bad file this way
        fail(str(exc).strip().splitlines()[-1] if str(exc).strip() else "Blender could not import it")
    armature = only_armature()
    frames = frame_range(armature)
    bpy.ops.object.select_all(action="DESELECT")
    armature.select_set(True)
    bpy.context.view_layer.objects.active = armature
    bpy.ops.export_scene.gltf(filepath=glb, export_format="GLB", use_selection=True, export_animations=frames is not None,
                              export_frame_range=True, export_force_sampling=True)  # fmt: skip
    render = bpy.context.scene.render
    with open(info, "w", encoding="utf-8") as handle:
        json.dump({"fps": render.fps / render.fps_base, "frames": None if frames is None else frames[1] - frames[0] + 1},
                  handle)  # fmt: skip


def write(bvh: str, fbx: str, scale: float) -> None:
    bpy.ops.import_anim.bvh(filepath=bvh, global_scale=scale, rotate_mode="NATIVE", axis_forward="-Z", axis_up="Y",
                            frame_start=1, use_fps_scale=False, update_scene_fps=True, update_scene_duration=True)  # fmt: skip
    armature = only_armature()
    frame_range(armature)
    bpy.ops.export_scene.fbx(filepath=fbx, object_types={"ARMATURE"}, bake_anim=True, bake_anim_simplify_factor=0.0,
                             add_leaf_bones=False, axis_forward="-Z", axis_up="Y",
                             apply_scale_options="FBX_SCALE_UNITS")  # fmt: skip


def main(argv: list[str]) -> None:
    args = argv[argv.index("--") + 1 :] if "--" in argv else argv[1:]
    bpy.ops.wm.read_factory_settings(use_empty=True)
    if args[:1] == ["read"] and len(args) == 4:
        read(*args[1:])
    elif args[:1] == ["write"] and len(args) == 4:
        write(args[1], args[2], float(args[3]))
    else:
        fail(f"usage: read FBX GLB INFO | write BVH FBX SCALE; got {args}")


if __name__ == "__main__":
    main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # bpy can crash while the interpreter shuts down, after the work is written
