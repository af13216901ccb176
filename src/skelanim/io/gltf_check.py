"""Structural checks of a glTF 2.0 JSON document before :mod:`skelanim.io.gltf` reads it.

:func:`check_document` looks at every property the reader uses, in the raw JSON (before any library
interprets it), and raises :class:`~skelanim.errors.FormatError` naming the file and the place as a
JSON path, e.g. ``walk.gltf: accessors[6].count: expected a whole number >= 1, found -1``. After it
passes, indices point at existing items, counts are sane whole numbers, accessor data starts at a multiple of
its component size (as glTF requires: data that does not was moved, and reads as garbage), node transforms are
finite numbers of the right length, skelanim's own ``extras.skelanim`` records are objects, and the nodes form
trees (no node is its own ancestor, none has two parents), so the reader neither crashes nor loops.
:func:`check_track` does the same for the sampled data of one animation channel. :func:`json_document` takes
the JSON document out of a file's bytes.
"""

from __future__ import annotations

import json
import math
import os
import struct
from typing import Any

import numpy as np

from skelanim.errors import FormatError
from skelanim.io.bvh_parse import channel_list_problem

__all__ = ["COMPONENT_TYPES", "INTERPOLATIONS", "MAX_ZERO_VALUES", "WIDTHS", "check_document", "check_track",
           "json_document"]

#: componentType -> little-endian NumPy dtype.
COMPONENT_TYPES: dict[int, str] = {5120: "<i1", 5121: "<u1", 5122: "<i2", 5123: "<u2", 5125: "<u4", 5126: "<f4"}
#: accessor type -> values per element.
WIDTHS: dict[str, int] = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
#: The sampler interpolations of glTF 2.0.
INTERPOLATIONS: tuple[str, ...] = ("LINEAR", "STEP", "CUBICSPLINE")
#: Most values (count x width) an accessor without a bufferView may ask for (it reads as zeros).
MAX_ZERO_VALUES: int = 1 << 24


def _show(value: Any) -> str:
    """A short JSON-like rendering of ``value`` for messages."""
    text = "null" if value is None else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Checker:
    """Raises :class:`FormatError` about ``path`` at a JSON place."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = path

    def fail(self, place: str, message: str) -> FormatError:
        return FormatError(message, path=self.path, where=place)

    def items(self, doc: dict[str, Any], key: str, place: str = "") -> list[dict[str, Any]]:
        """``doc[key]`` as a list of JSON objects (``[]`` when absent); ``place`` is ``doc``'s place."""
        value, where = doc.get(key), f"{place}.{key}" if place else key
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(where, f"expected a list, found {_show(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.fail(f"{where}[{i}]", f"expected an object, found {_show(item)}")
        return value

    def whole(self, obj: dict[str, Any], key: str, place: str, *, required: bool = False, low: int = 0,
              below: int | None = None, of: str = "") -> int | None:
        """``obj[key]``: a whole number ``>= low`` (and ``< below``: an index into ``of``), or ``None``."""
        value = obj.get(key)
        if key not in obj and required:
            expected = f"an index into {of}" if of else f"a whole number >= {low}"
            raise self.fail(f"{place}.{key}", f"missing; expected {expected}")
        if value is None and not required:
            return None
        return self.whole_value(value, f"{place}.{key}", low=low, below=below, of=of)

    def whole_value(self, value: Any, place: str, *, low: int = 0, below: int | None = None, of: str = "") -> int:
        """``value`` (at ``place``) as a whole number ``>= low`` (and ``< below``: an index into ``of``)."""
        out_of_range = isinstance(value, int) and (value < low or (below is not None and value >= below))
        if isinstance(value, bool) or not isinstance(value, int) or out_of_range:
            if of:
                expected = f"an index into {of} (0 to {below - 1})" if below else f"an index into {of}, which is empty"
            else:
                expected = f"a whole number >= {low}" + (f" and < {below}" if below is not None else "")
            raise self.fail(place, f"expected {expected}, found {_show(value)}")
        return value

    def numbers(self, obj: dict[str, Any], key: str, place: str, size: int) -> list[float] | None:
        """``obj[key]``: ``size`` finite numbers, or ``None``."""
        value = obj.get(key)
        if value is None:
            return None
        if (not isinstance(value, list) or len(value) != size
                or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)):
            raise self.fail(f"{place}.{key}", f"expected a list of {size} numbers, found {_show(value)}")
        try:
            finite = all(math.isfinite(v) for v in value)
        except OverflowError:  # an integer beyond float range
            finite = False
        if not finite:
            raise self.fail(f"{place}.{key}", f"expected {size} finite numbers, found {_show(value)}")
        return [float(v) for v in value]

    def text(self, obj: dict[str, Any], key: str, place: str, *, required: bool = False,
             choices: tuple[str, ...] = ()) -> str | None:
        value = obj.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or (choices and value not in choices):
            expected = " or ".join(choices) if choices else "a string"
            raise self.fail(f"{place}.{key}", f"expected {expected}, found {_show(value)}")
        return value

    def positive(self, obj: dict[str, Any], key: str, place: str) -> None:
        value = obj.get(key)
        try:
            good = (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
                    and value > 0)  # fmt: skip
        except OverflowError:
            good = False
        if not good:
            raise self.fail(f"{place}.{key}", f"expected a positive number, found {_show(value)}")


def _extras(c: _Checker, item: dict[str, Any], place: str) -> dict[str, Any] | None:
    """``item.extras.skelanim`` (skelanim's own record), ``None`` when absent; an object, or :class:`FormatError`."""
    extras = item.get("extras")
    info = extras.get("skelanim") if isinstance(extras, dict) else None
    if info is not None and not isinstance(info, dict):
        raise c.fail(f"{place}.extras.skelanim", f"expected an object (skelanim's record), found {_show(info)}")
    return info


def _check_alignment(c: _Checker, place: str, offset: int, view: dict[str, Any], view_index: int,
                     component: np.dtype) -> None:
    """glTF 2.0 (3.6.2.4): an accessor's ``byteOffset``, and its start in the buffer (plus the bufferView's), are
    multiples of its component size; data that starts elsewhere was moved or cut, and reads as garbage (the
    Khronos validator's ACCESSOR_TOTAL_OFFSET_ALIGNMENT)."""
    item = component.itemsize
    if offset % item:
        raise c.fail(f"{place}.byteOffset", f"expected a multiple of {item} (the size of its components), found {offset}")
    start = offset + (view.get("byteOffset") or 0)
    if start % item:
        raise c.fail(place, f"its data starts at byte {start} of the buffer (bufferViews[{view_index}].byteOffset "
                     f"{view.get('byteOffset') or 0} + byteOffset {offset}), not a multiple of its {item}-byte "
                     "components as glTF requires: the data is misplaced")


def _check_tree(c: _Checker, nodes: list[dict[str, Any]]) -> None:
    """Children are valid node indices, no node has two parents and none is its own ancestor."""
    parent: dict[int, int] = {}
    for p, node in enumerate(nodes):
        children = node.get("children")
        if children is None:
            continue
        if not isinstance(children, list):
            raise c.fail(f"nodes[{p}].children", f"expected a list of node indices, found {_show(children)}")
        for k in range(len(children)):
            child = c.whole_value(children[k], f"nodes[{p}].children[{k}]", below=len(nodes), of="nodes")
            if child == p:
                raise c.fail(f"nodes[{p}].children[{k}]", "the node lists itself as its child; expected a tree")
            if child in parent:
                raise c.fail(f"nodes[{p}].children[{k}]", f"node {child} is already a child of nodes[{parent[child]}];"
                             " a node has at most one parent")
            parent[child] = p
    done: set[int] = set()
    for start in range(len(nodes)):
        seen: list[int] = []
        n: int | None = start
        while n is not None and n not in done:
            if n in seen:
                cycle = seen[seen.index(n):] + [n]
                raise c.fail(f"nodes[{n}].children", "the nodes form a cycle (" + " -> ".join(
                    f"nodes[{m}]" for m in reversed(cycle)) + "); expected a tree")
            seen.append(n)
            n = parent.get(n)
        done.update(seen)


def json_document(raw: bytes) -> Any:
    """The JSON document of a ``.glb`` (its first chunk) or ``.gltf`` file, as plain Python values; ``ValueError``
    saying what the bytes are not."""
    if not raw.strip():
        raise ValueError("the file is empty")
    if raw[:4] == b"glTF":
        if len(raw) < 20:
            raise ValueError(f"a binary glTF cut short: {len(raw)} bytes, not even its 20-byte header")
        length, kind = struct.unpack_from("<I4s", raw, 12)
        if kind != b"JSON":
            raise ValueError(f"the first chunk is {kind!r}, expected JSON")
        if len(raw) < 20 + length:
            raise ValueError(f"a binary glTF cut short: {len(raw)} bytes, its JSON chunk alone says {20 + length} "
                             f"(with the header)")  # fmt: skip
        return json.loads(raw[20 : 20 + length])
    if raw.lstrip()[:1] != b"{":
        raise ValueError("neither a binary glTF (it would start with 'glTF') nor a JSON glTF (it would start with '{')")
    return json.loads(raw.decode())


def check_document(doc: Any, path: str | os.PathLike) -> None:
    """Check the glTF JSON ``doc`` (see the module docstring); raise :class:`FormatError` at the first problem."""
    c = _Checker(path)
    if not isinstance(doc, dict):
        raise c.fail("top level", f"expected a JSON object, found {_show(doc)}")
    asset = doc.get("asset")
    if not isinstance(asset, dict):
        raise c.fail("asset", f"expected an object with the glTF version (every glTF file has one), found {_show(asset)}")
    version = asset.get("version")
    if not isinstance(version, str) or version.partition(".")[0] != "2":
        raise c.fail("asset.version", f"expected a glTF 2 version such as \"2.0\", found {_show(version)}")
    buffers, views, accessors = c.items(doc, "buffers"), c.items(doc, "bufferViews"), c.items(doc, "accessors")
    nodes, skins, animations = c.items(doc, "nodes"), c.items(doc, "skins"), c.items(doc, "animations")

    for i, buffer in enumerate(buffers):
        uri = c.text(buffer, "uri", f"buffers[{i}]")
        if uri is not None and uri.startswith("data:") and "," not in uri:
            raise c.fail(f"buffers[{i}].uri", "expected a data URI 'data:<type>;base64,<data>', found no ','")
        c.whole(buffer, "byteLength", f"buffers[{i}]")
    for i, view in enumerate(views):
        c.whole(view, "buffer", f"bufferViews[{i}]", required=True, below=len(buffers), of="buffers")
        c.whole(view, "byteOffset", f"bufferViews[{i}]")
        c.whole(view, "byteLength", f"bufferViews[{i}]", required=True, low=1)
        c.whole(view, "byteStride", f"bufferViews[{i}]", low=1)
    for i, acc in enumerate(accessors):
        place = f"accessors[{i}]"
        view_index = c.whole(acc, "bufferView", place, below=len(views), of="bufferViews")
        offset = c.whole(acc, "byteOffset", place) or 0
        component = acc.get("componentType")
        if isinstance(component, bool) or component not in COMPONENT_TYPES:
            raise c.fail(f"{place}.componentType", f"expected one of {', '.join(map(str, COMPONENT_TYPES))}, "
                         f"found {_show(component)}")
        kind = c.text(acc, "type", place, required=True, choices=tuple(WIDTHS))
        count = c.whole(acc, "count", place, required=True, low=1)
        assert kind is not None and count is not None
        if not isinstance(acc.get("normalized", False), bool):
            raise c.fail(f"{place}.normalized", f"expected true or false, found {_show(acc['normalized'])}")
        size = np.dtype(COMPONENT_TYPES[component]).itemsize * WIDTHS[kind]
        if view_index is None and acc.get("sparse") is None and count * WIDTHS[kind] > MAX_ZERO_VALUES:
            raise c.fail(f"{place}.count", f"{count} {kind} values without a bufferView: more than "
                         f"{MAX_ZERO_VALUES} zeros, expected a bufferView holding the data")
        if view_index is not None:
            _check_alignment(c, place, offset, views[view_index], view_index, np.dtype(COMPONENT_TYPES[component]))
        stride = views[view_index].get("byteStride") if view_index is not None else None
        if stride is not None and stride < size:
            raise c.fail(f"bufferViews[{view_index}].byteStride", f"{stride} bytes is less than one element of "
                         f"{place} ({size} bytes)")

    for i, node in enumerate(nodes):
        place = f"nodes[{i}]"
        c.text(node, "name", place)
        for key, size in (("translation", 3), ("scale", 3), ("matrix", 16)):
            c.numbers(node, key, place, size)
        rotation = c.numbers(node, "rotation", place, 4)
        if rotation is not None and math.hypot(*rotation) < 1e-12:
            raise c.fail(f"{place}.rotation", "expected a unit quaternion (x, y, z, w), found zero")
        info = _extras(c, node, place)
        channels = info.get("channels") if info else None
        if channels is not None and (not isinstance(channels, list) or not all(isinstance(x, str) for x in channels)):
            raise c.fail(f"{place}.extras.skelanim.channels",
                         f"expected a list of channel names, found {_show(channels)}")
        problem = channel_list_problem(channels) if channels is not None else None
        if problem is not None:  # a layout no BVH file could hold would fail (or mislead) a later save
            raise c.fail(f"{place}.extras.skelanim.channels", problem)
    _check_tree(c, nodes)

    for i, skin in enumerate(skins):
        joints = skin.get("joints")
        if not isinstance(joints, list) or not joints:
            raise c.fail(f"skins[{i}].joints", f"expected a non-empty list of node indices, found {_show(joints)}")
        for k in range(len(joints)):
            c.whole_value(joints[k], f"skins[{i}].joints[{k}]", below=len(nodes), of="nodes")
        info = _extras(c, skin, f"skins[{i}]")
        if info is not None and i == 0:
            c.positive(info, "scale", f"skins[{i}].extras.skelanim")
            c.text(info, "up_axis", f"skins[{i}].extras.skelanim", required=True, choices=("x", "y", "z", "-x", "-y", "-z"))
            c.text(info, "unit", f"skins[{i}].extras.skelanim")

    for a, anim in enumerate(animations):
        place = f"animations[{a}]"
        c.text(anim, "name", place)
        samplers = c.items(anim, "samplers", place)
        for s, sampler in enumerate(samplers):
            where = f"{place}.samplers[{s}]"
            c.whole(sampler, "input", where, required=True, below=len(accessors), of="accessors")
            c.whole(sampler, "output", where, required=True, below=len(accessors), of="accessors")
            c.text(sampler, "interpolation", where, choices=INTERPOLATIONS)
        for k, channel in enumerate(c.items(anim, "channels", place)):
            where = f"{place}.channels[{k}]"
            c.whole(channel, "sampler", where, required=True, below=len(samplers), of=f"{place}.samplers")
            target = channel.get("target")
            if not isinstance(target, dict):
                raise c.fail(f"{where}.target", f"expected an object with node and path, found {_show(target)}")
            c.whole(target, "node", f"{where}.target", below=len(nodes), of="nodes")
            c.text(target, "path", f"{where}.target", required=True)
        info = _extras(c, anim, place)
        if info is not None and info.get("fps") is not None:
            c.positive(info, "fps", f"{place}.extras.skelanim")
        if info is not None and info.get("metadata") is not None:
            _check_carried_metadata(c, info["metadata"], f"{place}.extras.skelanim.metadata")


def _check_carried_metadata(c: _Checker, metadata: Any, place: str) -> None:
    """The take's metadata a skelanim export carries (``gltf.CLIP_METADATA``): the types the writers rely on."""
    if not isinstance(metadata, dict):
        raise c.fail(place, f"expected an object, found {_show(metadata)}")
    for key in ("frame_time", "frame_duration"):
        if metadata.get(key) is not None:
            c.positive(metadata, key, place)
    extra = metadata.get("deepmimic_extra")
    if extra is not None and not isinstance(extra, dict):
        raise c.fail(f"{place}.deepmimic_extra", f"expected an object of top-level keys, found {_show(extra)}")
    loop = metadata.get("loop")
    if loop is not None and not isinstance(loop, (str, bool)):
        raise c.fail(f"{place}.loop", f"expected a string or true/false, found {_show(loop)}")
    scene = metadata.get("bvh_scene_root")
    if scene is not None and not isinstance(scene, str):
        raise c.fail(f"{place}.bvh_scene_root", f"expected a joint name, found {_show(scene)}")


def check_track(keys: np.ndarray, values: np.ndarray, *, kind: str, mode: str, place: str,
                path: str | os.PathLike) -> None:
    """Check the data of one animation channel: ``keys`` ``(K, w_in)`` from the sampler's input accessor,
    ``values`` ``(V, w_out)`` from its output; ``kind`` is the target path (rotation, translation, scale)
    and ``place`` the sampler's JSON place (``animations[0].samplers[3]``)."""
    c = _Checker(path)
    width = 4 if kind == "rotation" else 3
    if keys.shape[1] != 1:
        raise c.fail(f"{place}.input", f"expected a SCALAR accessor of key times, found {keys.shape[1]} values per key")
    if values.shape[1] != width:
        raise c.fail(f"{place}.output", f"expected VEC{width} values for a {kind}, found {values.shape[1]} per key")
    per_key = 3 if mode == "CUBICSPLINE" else 1
    if len(values) != per_key * len(keys):
        raise c.fail(f"{place}.output", f"{len(values)} values for {len(keys)} key times; expected "
                     f"{per_key * len(keys)}" + (" (in-tangent, value, out-tangent per key)" if per_key == 3 else ""))
    times = keys[:, 0]
    if not np.isfinite(times).all():
        raise c.fail(f"{place}.input", f"key time {int(np.flatnonzero(~np.isfinite(times))[0])} is not finite")
    step = np.flatnonzero(np.diff(times) <= 0)
    if step.size:
        k = int(step[0]) + 1
        raise c.fail(f"{place}.input", f"key times must increase; key {k} ({float(times[k]):g} s) follows "
                     f"{float(times[k - 1]):g} s")
    bad = np.argwhere(~np.isfinite(values))
    if bad.size:
        raise c.fail(f"{place}.output", f"value {int(bad[0, 0])} is not finite")
    if kind == "rotation":
        norms = np.linalg.norm(values[per_key // 2::per_key], axis=1)
        if (norms < 1e-12).any():
            raise c.fail(f"{place}.output", f"rotation {int(np.flatnonzero(norms < 1e-12)[0])} is a zero quaternion")
