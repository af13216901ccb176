"""Blender's side of :mod:`skelanim.io.fbx`: run by Blender (``blender --background --factory-startup --python
_blender_fbx.py -- ...``) or by a Python with Blender's ``bpy`` module (``python _blender_fbx.py -- ...``); it imports
nothing of skelanim.

    ... -- read FBX GLB INFO    an FBX's armature and its animations (every take) as a GLB, keys timed at whole
                                ``timed_at`` fps; INFO (JSON): that, the file's true rate ``fps``, the active
                                take and all takes' names
    ... -- write BVH FBX SCALE FPS  a BVH (Y up) as an FBX of its armature at FPS: imported at SCALE (metres per
                                unit) turned to Blender's Z up, exported baked at every frame (Simplify 0), no leaf
                                bones, FBX units scale, forward -Z, up Y (docs/engines.md's settings)

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


def only_armature() -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """The scene's one armature and the objects it hangs below (their placement is its own: an FBX's null nodes);
    every other top-level object is removed (meshes, cameras, lights: only the skeleton is read)."""
    armatures = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    if len(armatures) != 1:
        fail(f"{len(armatures)} armatures in the scene; one is read (a skeleton with its animation)")
    armature, above, node = armatures[0], [], armatures[0].parent
    while node is not None:
        above.append(node)
        node = node.parent
    top = above[-1] if above else armature
    for other in [o for o in bpy.context.scene.objects if o.parent is None and o is not top]:
        bpy.data.objects.remove(other, do_unlink=True)
    return armature, above


def whole_frame_ranges(armature: bpy.types.Object) -> None:
    """Every action's range made whole frames (keys at float seconds land a hair off them: 126.99999, where the glTF
    exporter would cut the last frame), the scene's that of the armature's active action."""
    for action in bpy.data.actions:
        start, end = action.frame_range
        action.use_frame_range, action.frame_start, action.frame_end = True, round(start), round(end)
    if armature.animation_data is not None and armature.animation_data.action is not None:
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = (round(f) for f in armature.animation_data.action.frame_range)


def true_rate_frames() -> None:
    """Blender 4.5's FBX importer places a key at ``t * fps`` frames, not ``t * fps / fps_base`` (an NTSC file's
    keys land 1.001 frames apart), and its glTF exporter times frame ``f`` at ``f / (fps * fps_base)``: the keys are
    moved to the file's own frames (about each action's first key), and ``fps_base`` set to 1 so that the glTF's
    times are ``f / fps``; ``info`` gives the true rate, which the reader relabels the frames with."""
    render = bpy.context.scene.render
    if abs(render.fps_base - 1.0) < 1e-9:
        return
    factor = 1.0 / render.fps_base
    for action in bpy.data.actions:
        start = action.frame_range[0]
        for curve in action.fcurves:
            for key in curve.keyframe_points:
                for point in (key.co, key.handle_left, key.handle_right):
                    point[0] = start + (point[0] - start) * factor
    render.fps_base = 1.0


def read(fbx: str, glb: str, info: str) -> None:
    try:
        bpy.ops.import_scene.fbx(filepath=fbx, use_anim=True)
    except RuntimeError as exc:  # Blender's importer reports a bad file this way
        fail(str(exc).strip().splitlines()[-1] if str(exc).strip() else "Blender could not import it")
    rate = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base  # the file's, as the importer read it
    armature, above = only_armature()
    true_rate_frames()
    whole_frame_ranges(armature)
    active = armature.animation_data.action if armature.animation_data is not None else None
    bpy.ops.object.select_all(action="DESELECT")
    for placed in (armature, *above):  # the nodes above it go into the glTF too, as the nodes above its root
        placed.select_set(True)
    bpy.context.view_layer.objects.active = armature
    bpy.ops.export_scene.gltf(filepath=glb, export_format="GLB", use_selection=True, export_animations=active is not None,
                              export_animation_mode="ACTIONS", export_frame_range=False, export_force_sampling=True)  # fmt: skip
    with open(info, "w", encoding="utf-8") as handle:
        json.dump({"fps": rate, "timed_at": bpy.context.scene.render.fps, "active": None if active is None else active.name,
                   "takes": [a.name for a in bpy.data.actions if _moves_bones(a)]}, handle)  # fmt: skip


def _moves_bones(action: bpy.types.Action) -> bool:
    """Whether ``action`` animates pose bones (the glTF exporter writes such actions as the armature's animations)."""
    return any(curve.data_path.startswith("pose.bones") for curve in action.fcurves)


def write(bvh: str, fbx: str, scale: float, rate: float) -> None:
    bpy.ops.import_anim.bvh(filepath=bvh, global_scale=scale, rotate_mode="NATIVE", axis_forward="-Z", axis_up="Y",
                            frame_start=1, use_fps_scale=False, update_scene_fps=True, update_scene_duration=True)  # fmt: skip
    # the motion's own rate, not Blender's reading of the BVH's rounded frame time (0.033333 s: 30.00003 fps, which
    # the FBX would carry as a custom rate): keys are whole frames either way
    render = bpy.context.scene.render
    render.fps = max(1, round(rate))
    render.fps_base = render.fps / rate
    whole_frame_ranges(only_armature()[0])
    bpy.ops.export_scene.fbx(filepath=fbx, object_types={"ARMATURE"}, bake_anim=True, bake_anim_simplify_factor=0.0,
                             add_leaf_bones=False, axis_forward="-Z", axis_up="Y",
                             apply_scale_options="FBX_SCALE_UNITS")  # fmt: skip


def main(argv: list[str]) -> None:
    args = argv[argv.index("--") + 1 :] if "--" in argv else argv[1:]
    bpy.ops.wm.read_factory_settings(use_empty=True)
    if args[:1] == ["read"] and len(args) == 4:
        read(*args[1:])
    elif args[:1] == ["write"] and len(args) == 5:
        write(args[1], args[2], float(args[3]), float(args[4]))
    else:
        fail(f"usage: read FBX GLB INFO | write BVH FBX SCALE FPS; got {args}")


if __name__ == "__main__":
    main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # bpy can crash while the interpreter shuts down, after the work is written
