"""Run in Blender's own Python environment (``tools/blender/.venv``, made by ``make tools``), never in the project's:
import a motion file into an empty Blender scene with Blender's own importers, optionally move the armature object
and export the scene with Blender's own exporters, and write the world positions of every pose bone's head at the
scene's frames to an ``.npz``. It imports nothing of skelanim; ``tests/helpers/blender.py`` runs it.

Usage: ``python blender_job.py SPEC.json``, where the spec holds

* ``import``: ``{"path": ..., "format": "bvh" | "gltf" | "fbx", "fps": N (gltf: the whole scene rate seconds map
  to), "bone_heuristic": "BLENDER" | "TEMPERANCE" | "FORTUNE" (gltf), "scale": S, "axes": "y_up" (bvh)}``; a BVH
  comes in at ``scale`` (default 1) without axis conversion, or with ``"axes": "y_up"`` turned from Y up to
  Blender's Z up (the importer's default, forward -Z, up Y), its frame 0 at Blender frame 1 and the scene at its
  rate; the action's frame range is made whole frames;
* ``object`` (optional): ``{"location": [x, y, z], "rotation_deg": [x, y, z], "scale": [x, y, z]}`` for the
  armature object, set before export;
* ``parent`` (optional): ``{"location": ..., "rotation_deg": ..., "scale": ...}`` of an empty the armature is
  parented to (an FBX export keeps it);
* ``second_take`` (optional): ``{"name": ..., "bone": ..., "offset": [x, y, z]}``: a copy of the action with that
  bone's location keys moved, made the active action (the original kept in an NLA track), so an FBX holds both;
* ``export`` (optional): ``{"path": ..., "format": "bvh" | "glb" | "fbx", "rotate_mode": ... (bvh)}``, an FBX with
  the settings docs/engines.md gives;
* ``heads``: the output ``.npz`` (``names`` (J,), ``heads`` (F, J, 3) in Blender's world, Z up, ``frames`` (F,)
  Blender frame numbers, ``fps``);
* ``stride`` (optional): every stride-th frame of the action's range (default 1).
"""

from __future__ import annotations

import json
import math
import os
import sys

import bpy
import numpy as np


def _import(spec: dict) -> None:
    path = spec["path"]
    if spec["format"] == "bvh":
        forward, up = ("-Z", "Y") if spec.get("axes") == "y_up" else ("Y", "Z")  # the file's Y up as Blender's Z up
        bpy.ops.import_anim.bvh(filepath=path, global_scale=spec.get("scale", 1.0), rotate_mode="NATIVE",
                                axis_forward=forward, axis_up=up, frame_start=1, use_fps_scale=False,
                                update_scene_fps=True, update_scene_duration=True)  # fmt: skip
    elif spec["format"] == "fbx":
        bpy.ops.import_scene.fbx(filepath=path)
    else:
        # whole rates only: Blender 4.5's glTF importer maps seconds to frames by fps * fps_base, not fps / fps_base
        bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = int(spec["fps"]), 1.0
        bpy.ops.import_scene.gltf(filepath=path, bone_heuristic=spec.get("bone_heuristic", "BLENDER"))


def _export(spec: dict, armature: bpy.types.Object, first: int, last: int) -> None:
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = first, last
    bpy.context.view_layer.objects.active = armature
    armature.select_set(True)
    if spec["format"] == "bvh":
        bpy.ops.export_anim.bvh(filepath=spec["path"], frame_start=first, frame_end=last,
                                rotate_mode=spec.get("rotate_mode", "NATIVE"), root_transform_only=False)  # fmt: skip
    elif spec["format"] == "fbx":  # docs/engines.md's settings for Unity (Unreal reads them too); simplify 1 is lossy
        bpy.ops.export_scene.fbx(filepath=spec["path"], object_types={"ARMATURE", "EMPTY"}, bake_anim=True,
                                 add_leaf_bones=False, axis_forward="-Z", axis_up="Y",
                                 apply_scale_options="FBX_SCALE_UNITS", bake_anim_simplify_factor=0.0)  # fmt: skip
    else:
        bpy.ops.export_scene.gltf(filepath=spec["path"], export_format="GLB", export_animations=True,
                                  export_frame_range=True)  # the scene's range: the action's may end a frame short


def _second_take(armature: bpy.types.Object, name: str, bone: str, offset: list[float]) -> None:
    """A copy of the active action named ``name``, ``bone``'s location keys moved by ``offset`` (in the bone's rest
    frame), made the active action; the original kept in an NLA track (an FBX export writes both as takes)."""
    original = armature.animation_data.action
    copy = original.copy()
    copy.name = name
    for curve in copy.fcurves:
        if curve.data_path == f'pose.bones["{bone}"].location':
            for key in curve.keyframe_points:
                for point in (key.co, key.handle_left, key.handle_right):
                    point[1] += offset[curve.array_index]
    armature.animation_data.nla_tracks.new().strips.new(original.name, 1, original)
    armature.animation_data.action = copy


def main(spec_path: str) -> None:
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    _import(spec["import"])
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    placed = spec.get("object", {})
    if "location" in placed:
        armature.location = placed["location"]
    if "rotation_deg" in placed:
        armature.rotation_euler = [math.radians(a) for a in placed["rotation_deg"]]
    if "scale" in placed:
        armature.scale = placed["scale"]
    if "parent" in spec:  # an empty above the armature, placed so
        holder = bpy.data.objects.new("Holder", None)
        bpy.context.scene.collection.objects.link(holder)
        holder.location = spec["parent"].get("location", (0, 0, 0))
        holder.rotation_euler = [math.radians(a) for a in spec["parent"].get("rotation_deg", (0, 0, 0))]
        holder.scale = spec["parent"].get("scale", (1, 1, 1))
        armature.parent = holder
    if "second_take" in spec:
        _second_take(armature, **spec["second_take"])
    action = armature.animation_data.action
    start, end = action.frame_range
    first, last = round(start), round(end)
    # keys at float32 seconds land a hair off whole frames (126.99999); the glTF exporter would cut the range there
    action.use_frame_range, action.frame_start, action.frame_end = True, first, last
    if "export" in spec:
        _export(spec["export"], armature, first, last)
    scene = bpy.context.scene
    frames = list(range(first, last + 1, int(spec.get("stride", 1))))
    heads = []
    for frame in frames:
        scene.frame_set(frame)
        heads.append([tuple(armature.matrix_world @ bone.head) for bone in armature.pose.bones])
    np.savez(spec["heads"], names=np.array([bone.name for bone in armature.pose.bones]), heads=np.array(heads),
             frames=np.array(frames), fps=scene.render.fps / scene.render.fps_base)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # bpy can crash while the interpreter shuts down, after the work is written
