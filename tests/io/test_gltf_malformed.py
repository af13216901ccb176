"""Malformed glTF files: every one is a one-line :class:`FormatError` naming the file and the JSON place
(``accessors[6].count``), never a raw Python exception, and never an endless loop (node cycles)."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_output import one_line_error  # tests/helpers
from time_limit import within  # tests/helpers

import skelanim
from skelanim.cli import main
from skelanim.data.samples import sample_path
from skelanim.errors import FormatError
from skelanim.io import gltf


@pytest.fixture(scope="module")
def base_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("gltf") / "walk.gltf"
    gltf.save(skelanim.load(sample_path("walk")), path)
    return json.loads(path.read_text())


def load_error(path: Path) -> str:
    with pytest.raises(FormatError) as info:
        within(20, lambda: gltf.load(path))
    assert info.value.path == str(path)
    line = info.value.one_line()
    assert "\n" not in line
    return line


def sampler_of(doc: dict[str, Any], path: str) -> tuple[int, dict[str, Any]]:
    """The first channel animating ``path`` (rotation/translation) and its sampler."""
    anim = doc["animations"][0]
    k = next(k for k, c in enumerate(anim["channels"]) if c["target"]["path"] == path)
    return k, anim["samplers"][anim["channels"][k]["sampler"]]


def set_times(doc: dict[str, Any], accessor: int, times: np.ndarray) -> None:
    """Overwrite the float32 key times of ``accessor`` in the embedded buffer."""
    uri = doc["buffers"][0]["uri"]
    head, data = uri.split(",", 1)
    blob = bytearray(base64.b64decode(data))
    acc = doc["accessors"][accessor]
    start = doc["bufferViews"][acc["bufferView"]].get("byteOffset", 0) + acc.get("byteOffset", 0)
    blob[start : start + 4 * len(times)] = times.astype("<f4").tobytes()
    doc["buffers"][0]["uri"] = head + "," + base64.b64encode(bytes(blob)).decode()


def rotation_input(d: dict[str, Any]) -> int:
    return sampler_of(d, "rotation")[1]["input"]


def translation_output(d: dict[str, Any]) -> int:
    return sampler_of(d, "translation")[1]["output"]


CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("count -1", lambda d: d["accessors"][rotation_input(d)].__setitem__("count", -1),
     "accessors[{acc}].count: expected a whole number >= 1, found -1"),
    ("count 2.5", lambda d: d["accessors"][rotation_input(d)].__setitem__("count", 2.5),
     "accessors[{acc}].count: expected a whole number >= 1, found 2.5"),
    ("count missing", lambda d: d["accessors"][rotation_input(d)].pop("count"), "accessors[{acc}].count: missing"),
    ("sampler null", lambda d: d["animations"][0]["channels"][0].__setitem__("sampler", None),
     "animations[0].channels[0].sampler: expected an index into animations[0].samplers"),
    ("sampler out of range", lambda d: d["animations"][0]["channels"][0].__setitem__("sampler", 999),
     "animations[0].channels[0].sampler: expected an index into animations[0].samplers (0 to"),
    ("target null", lambda d: d["animations"][0]["channels"][0].__setitem__("target", None),
     "animations[0].channels[0].target: expected an object"),
    ("target node text", lambda d: d["animations"][0]["channels"][0]["target"].__setitem__("node", "x"),
     "animations[0].channels[0].target.node: expected an index into nodes"),
    ("input null", lambda d: d["animations"][0]["samplers"][0].__setitem__("input", None),
     "animations[0].samplers[0].input: expected an index into accessors"),
    ("bad interpolation", lambda d: d["animations"][0]["samplers"][0].__setitem__("interpolation", "SMOOTH"),
     "animations[0].samplers[0].interpolation: expected LINEAR or STEP or CUBICSPLINE"),
    ("short translation", lambda d: d["nodes"][1].__setitem__("translation", [1.0, 2.0]),
     "nodes[1].translation: expected a list of 3 numbers, found [1.0, 2.0]"),
    ("text rotation", lambda d: d["nodes"][1].__setitem__("rotation", "x"), "nodes[1].rotation: expected a list of 4"),
    ("zero rotation", lambda d: d["nodes"][1].__setitem__("rotation", [0, 0, 0, 0]),
     "nodes[1].rotation: expected a unit quaternion"),
    ("skin joint out of range", lambda d: d["skins"][0]["joints"].__setitem__(0, 999),
     "skins[0].joints[0]: expected an index into nodes"),
    ("buffer view out of range", lambda d: d["accessors"][rotation_input(d)].__setitem__("bufferView", 999),
     "accessors[{acc}].bufferView: expected an index into bufferViews"),
    ("component type", lambda d: d["accessors"][rotation_input(d)].__setitem__("componentType", 1),
     "accessors[{acc}].componentType: expected one of"),
    ("nodes not a list", lambda d: d.__setitem__("nodes", {"a": 1}), "nodes: expected a list"),
    ("data uri without comma", lambda d: d["buffers"][0].__setitem__("uri", "data:application/octet-stream"),
     "buffers[0].uri: expected a data URI"),
    ("reads past the view", lambda d: d["accessors"][rotation_input(d)].__setitem__("count", 10**12),
     "accessors[{acc}]: 1000000000000 elements from byte"),
    ("zeros without a view", lambda d: (d["accessors"][rotation_input(d)].pop("bufferView"),
                                        d["accessors"][rotation_input(d)].__setitem__("count", 10**12)),
     "accessors[{acc}].count: 1000000000000 SCALAR values without a bufferView"),
    ("fps not a number", lambda d: d["animations"][0]["extras"]["skelanim"].__setitem__("fps", "fast"),
     "animations[0].extras.skelanim.fps: expected a positive number"),
    ("absurd fps", lambda d: d["animations"][0]["extras"]["skelanim"].__setitem__("fps", 1e12),
     "animations[0]: keys from 0 s to"),
    ("rotation output is scalar", lambda d: sampler_of(d, "rotation")[1].__setitem__("output", rotation_input(d)),
     "animations[0].samplers[{sampler}].output: expected VEC4 values for a rotation, found 1 per key"),
    ("too few values", lambda d: d["accessors"][sampler_of(d, "rotation")[1]["output"]].__setitem__("count", 3),
     "animations[0].samplers[{sampler}].output: 3 values for"),
    ("times go back", lambda d: set_times(d, rotation_input(d), np.array([0.0, 0.5, 0.25])),
     "animations[0].samplers[{sampler}].input: key times must increase; key 2 (0.25 s) follows 0.5 s"),
    ("children self", lambda d: d["nodes"][0].__setitem__("children", [0]),
     "nodes[0].children[0]: the node lists itself as its child"),
    ("two parents", lambda d: d["nodes"][2].setdefault("children", []).append(d["nodes"][0]["children"][0]),
     "is already a child of nodes[0]; a node has at most one parent"),
    ("cycle", lambda d: d["nodes"][1].setdefault("children", []).append(0),
     "the nodes form a cycle (nodes[0] -> nodes[1] -> nodes[0]); expected a tree"),
    # an audit (2026-12-06): the version was not read, and skelanim's own extras were taken as they came, so a
    # later save crashed (nine channels, a text deepmimic_extra) or failed without naming the file (XXY)
    ("glTF 1", lambda d: d["asset"].__setitem__("version", "1.0"), 'asset.version: expected a glTF 2 version such as "2.0", found \'1.0\''),
    ("no asset", lambda d: d.pop("asset"), "asset: expected an object with the glTF version"),
    ("nine channels", lambda d: d["nodes"][1]["extras"]["skelanim"].__setitem__("channels", ["Xrotation"] * 9),
     "nodes[1].extras.skelanim.channels: expected at most 6 channels, found 9"),
    ("axis twice in a row", lambda d: d["nodes"][1]["extras"]["skelanim"].__setitem__(
        "channels", ["Xrotation", "Xrotation", "Yrotation"]),
     "nodes[1].extras.skelanim.channels: expected at most 3 rotation channels, no axis twice in a row"),
    ("unknown channel", lambda d: d["nodes"][1]["extras"]["skelanim"].__setitem__("channels", ["Wrotation"]),
     "nodes[1].extras.skelanim.channels: expected channel names (X/Y/Z + position/rotation), found 'Wrotation'"),
    ("carried extra not an object", lambda d: d["animations"][0]["extras"]["skelanim"].__setitem__(
        "metadata", {"deepmimic_extra": "abc"}),
     "animations[0].extras.skelanim.metadata.deepmimic_extra: expected an object of top-level keys, found 'abc'"),
    ("carried frame time", lambda d: d["animations"][0]["extras"]["skelanim"].__setitem__(
        "metadata", {"frame_time": -1}), "animations[0].extras.skelanim.metadata.frame_time: expected a positive number"),
    # an audit (2026-12): data moved off its 4-byte grid read as garbage (a joint 6e7 m away), and an
    # extras.skelanim that is no object was "could not read (AttributeError ...)"
    ("view moved 2 bytes", lambda d: d["bufferViews"][d["accessors"][translation_output(d)]["bufferView"]].__setitem__(
        "byteOffset", d["bufferViews"][d["accessors"][translation_output(d)]["bufferView"]]["byteOffset"] - 2),
     "accessors[{out}]: its data starts at byte"),
    ("accessor offset 2", lambda d: d["accessors"][rotation_input(d)].__setitem__("byteOffset", 2),
     "accessors[{acc}].byteOffset: expected a multiple of 4 (the size of its components), found 2"),
    ("node extras not an object", lambda d: d["nodes"][1]["extras"].__setitem__("skelanim", 2),
     "nodes[1].extras.skelanim: expected an object (skelanim's record), found 2"),
    ("skin extras not an object", lambda d: d["skins"][0]["extras"].__setitem__("skelanim", "x"),
     "skins[0].extras.skelanim: expected an object (skelanim's record), found 'x'"),
    ("animation extras empty list", lambda d: d["animations"][0]["extras"].__setitem__("skelanim", []),
     "animations[0].extras.skelanim: expected an object (skelanim's record), found []"),
]


@pytest.mark.parametrize(("name", "change", "expected"), CASES, ids=[c[0] for c in CASES])
def test_malformed_gltf_is_one_format_error_at_its_place(tmp_path: Path, base_doc: dict[str, Any], name: str,
                                                        change: Callable[[dict[str, Any]], None],
                                                        expected: str) -> None:
    doc = json.loads(json.dumps(base_doc))
    place = {"acc": rotation_input(doc), "sampler": sampler_of(doc, "rotation")[0], "out": translation_output(doc)}
    place["sampler"] = doc["animations"][0]["channels"][place["sampler"]]["sampler"]
    change(doc)
    path = tmp_path / "bad.gltf"
    path.write_text(json.dumps(doc))
    line = load_error(path)
    assert line.startswith(f"{path}: "), line
    assert expected.format(**place) in line, line


def test_huge_count_literal(tmp_path: Path, base_doc: dict[str, Any]) -> None:
    """``1e400`` reads as infinity in JSON: it is no count (it used to raise OverflowError)."""
    doc = json.loads(json.dumps(base_doc))
    acc = rotation_input(doc)
    doc["accessors"][acc]["count"] = "HUGE"
    path = tmp_path / "huge.gltf"
    path.write_text(json.dumps(doc).replace('"HUGE"', "1e400"))
    assert f"accessors[{acc}].count: expected a whole number >= 1, found inf" in load_error(path)


def test_cycle_in_a_glb_is_refused(tmp_path: Path, base_doc: dict[str, Any]) -> None:
    doc = json.loads(json.dumps(base_doc))
    blob = base64.b64decode(doc["buffers"][0].pop("uri").split(",", 1)[1])
    doc["nodes"][3].setdefault("children", []).append(0)  # nodes[0] is an ancestor of nodes[3]
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    path = tmp_path / "cycle.glb"
    path.write_bytes(struct.pack("<4sII", b"glTF", 2, 12 + 8 + len(text) + 8 + len(blob))
                     + struct.pack("<I4s", len(text), b"JSON") + text + struct.pack("<I4s", len(blob), b"BIN\0") + blob)
    assert "the nodes form a cycle" in load_error(path)


def test_a_nan_bit_pattern_is_one_error_line_at_the_command_line(tmp_path: Path, base_doc: dict[str, Any],
                                                                capfd: pytest.CaptureFixture[str]) -> None:
    """A signalling NaN in a rotation output used to print numpy's ``warning: invalid value encountered in cast``
    before the error."""
    doc = json.loads(json.dumps(base_doc))
    sampler, found = sampler_of(doc, "rotation")
    sampler = doc["animations"][0]["channels"][sampler]["sampler"]
    head, data = doc["buffers"][0]["uri"].split(",", 1)
    blob = bytearray(base64.b64decode(data))
    acc = doc["accessors"][found["output"]]
    start = doc["bufferViews"][acc["bufferView"]].get("byteOffset", 0) + acc.get("byteOffset", 0)
    blob[start : start + 4] = struct.pack("<I", 0x7F800001)  # float32 signalling NaN
    doc["buffers"][0]["uri"] = head + "," + base64.b64encode(bytes(blob)).decode()
    path = tmp_path / "snan.gltf"
    path.write_text(json.dumps(doc))
    capfd.readouterr()
    one_line_error(capfd, main(["info", str(path)]), str(path),
                   f"animations[0].samplers[{sampler}].output: value 0 is not finite")


def test_the_unchanged_document_still_loads(tmp_path: Path, base_doc: dict[str, Any]) -> None:
    path = tmp_path / "fine.gltf"
    path.write_text(json.dumps(base_doc))
    assert gltf.load(path).num_frames == skelanim.load(sample_path("walk")).num_frames
