"""Reading the text of a BVH file into plain arrays: the joint tree, each joint's channels, and the frames.

This is the format layer only; :mod:`skelanim.io.bvh` turns the result into a :class:`~skelanim.Motion`.

What is accepted (everything seen from real exporters):

* any whitespace (spaces, tabs, ``\\r\\n``, ``\\r``), keywords in any case, braces on their own line or
  glued to a name (``Hips{``);
* any channel order and any subset of the six channels per joint, including none (no ``CHANNELS`` line
  or ``CHANNELS 0``); channel names in any case (``XROTATION``), stored in canonical case;
* ``End Site`` blocks under any name (``End Site``, ``End site``, ``End``, ``End Site LeftToe_End``);
* joint names with spaces (the rest of the ``JOINT`` line);
* numbers as ``1``, ``-0.5``, ``.5``, ``5.``, ``1e-06``, ``+2E3``; a ``Frame Time`` from 1e-6 to 3600 s; an
  ``OFFSET`` (a joint's or an End Site's) within +-:data:`MAX_LENGTH`;
* several ``ROOT`` blocks one after another (figures: actors, props), read as one tree under a joint without
  channels (:data:`SCENE_ROOT`), which :mod:`skelanim.io.bvh`'s writer leaves out again.

Anything else raises :class:`~skelanim.errors.FormatError` with the file, the 1-based line and what was
expected. The hierarchy is parsed with an explicit stack, so nesting depth is unbounded.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from skelanim.errors import FormatError
from skelanim.io.bvh_numbers import NUMBER_RE, parse_motion_values
from skelanim.io.common import MAX_FRAME_TIME, MIN_FRAME_TIME, UTF16_MESSAGE, is_utf16

__all__ = ["CHANNEL_NAMES", "MAX_LENGTH", "ParsedBVH", "channel_list_problem", "normalize_bytes", "parse_bvh_bytes",
           "rotation_axes_allowed"]  # fmt: skip

#: Canonical channel names, keyed by their lower-case spelling.
CHANNEL_NAMES: dict[str, str] = {
    name.lower(): name
    for name in ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")
}

_MOTION_RE = re.compile(rb"(?im)^[ \t]*MOTION[ \t]*\r?$")
_FRAMES_RE = re.compile(rb"(?i)^[ \t]*Frames[ \t]*:[ \t]*(\S*)[ \t\r]*$")
_FRAME_TIME_RE = re.compile(rb"(?i)^[ \t]*Frame[ \t]*Time[ \t]*:[ \t]*(\S*)[ \t\r]*$")
_BOM = b"\xef\xbb\xbf"

#: The largest magnitude of a BVH position value or OFFSET (the file's length unit: 1,000 km in millimetres). Beyond it
#: a finite number is a corrupt one, and forward kinematics would overflow. Angles are not bounded: any is a rotation.
MAX_LENGTH = 1e9


@dataclass
class ParsedBVH:
    """The content of a BVH file, as written (degrees, file units).

    Attributes
    ----------
    names:
        ``J`` joint names in file order (parents before children).
    parents:
        ``(J,)`` int64 parent indices, ``-1`` for the root.
    offsets:
        ``(J, 3)`` float64 ``OFFSET`` of each joint.
    channels:
        Per joint, its channel names in file order (canonical case).
    end_sites:
        ``{joint: (3,) float64 offset}`` of the first ``End Site`` under each joint.
    frame_time:
        Seconds per frame (``> 0``).
    values:
        ``(F, C)`` float64 channel values, ``C = sum(len(c) for c in channels)``, joints in file order.
    extra_end_sites:
        Number of further ``End Site`` blocks under a joint that already had one (not kept).
    extra_frames:
        Number of complete frame lines after the declared ``Frames:`` count (ignored).
    end_site_names:
        ``{joint: label}``: the ``End Site`` line as written (some exporters name it, ``End Site Head_End``).
    renamed:
        ``(new name, line, line of the first)`` for each joint whose name an earlier joint had: read under the
        name with the first free suffix ``.001``, ``.002`` ... (as Blender renames; other readers read such
        files too, where names were refused before).
    scene_root:
        For a file of several ``ROOT`` s (figures), the name of the joint without channels put at index 0 above them
        (:func:`_under_one_root`; the file's joints follow, one index later); ``None`` for one figure.
    """

    names: list[str]
    parents: np.ndarray
    offsets: np.ndarray
    channels: list[tuple[str, ...]]
    end_sites: dict[int, np.ndarray]
    frame_time: float
    values: np.ndarray
    extra_end_sites: int = 0
    extra_frames: int = 0
    end_site_names: dict[int, str] = field(default_factory=dict)
    renamed: list[tuple[str, int, int]] = field(default_factory=list)
    scene_root: str | None = None


class _Tokens:
    """The hierarchy text as ``(token, line)`` pairs with one-token look-ahead."""

    def __init__(self, text: str, first_line: int, path: str, end_line: int) -> None:
        self.items: list[tuple[str, int]] = []
        for i, line in enumerate(text.split("\n")):
            for tok in line.replace("{", " { ").replace("}", " } ").split():
                self.items.append((tok, first_line + i))
        self.pos = 0
        self.path = path
        self.end_line = end_line

    def peek(self) -> tuple[str | None, int]:
        if self.pos < len(self.items):
            return self.items[self.pos]
        return None, self.end_line

    def next(self, expected: str) -> tuple[str, int]:
        tok, line = self.peek()
        if tok is None:
            raise FormatError(f"unexpected end of the hierarchy: expected {expected}", path=self.path, line=line)
        self.pos += 1
        return tok, line

    def rest_of_line(self, line: int) -> list[str]:
        """Tokens left on ``line`` (used for names, which may contain spaces)."""
        out = []
        while self.pos < len(self.items) and self.items[self.pos][1] == line and self.items[self.pos][0] not in "{}":
            out.append(self.items[self.pos][0])
            self.pos += 1
        return out

    def error(self, message: str, line: int) -> FormatError:
        return FormatError(message, path=self.path, line=line)


def _number(tok: str, line: int, what: str, tokens: _Tokens) -> float:
    if NUMBER_RE.fullmatch(tok.encode("ascii", "replace")) is None:
        raise tokens.error(f"expected {what}, found {tok[:40]!r}", line)
    value = float(tok)
    if not math.isfinite(value):
        raise tokens.error(f"{what} out of range: {tok[:40]!r}", line)
    return value


def _offset(tokens: _Tokens, owner: str, label: str) -> np.ndarray:
    """The ``OFFSET x y z`` of ``owner`` (``label`` names it in the error for a length beyond :data:`MAX_LENGTH`,
    at the OFFSET's line: a joint's or an End Site's)."""
    tok, line = tokens.next(f"OFFSET of {owner}")
    if tok.upper() != "OFFSET":
        raise tokens.error(f"expected OFFSET x y z for {owner}, found {tok[:40]!r}", line)
    xyz = []
    for axis in "xyz":
        t, ln = tokens.next(f"the OFFSET {axis} of {owner}")
        xyz.append(_number(t, ln, f"the OFFSET {axis} of {owner} (a number)", tokens))
    if max(map(abs, xyz)) > MAX_LENGTH:
        raise tokens.error(f"OFFSET of {label} beyond +-{MAX_LENGTH:g}: not a length (a corrupt number?)", line)
    return np.array(xyz, dtype=np.float64)


def rotation_axes_allowed(channels: Sequence[str]) -> bool:
    """Whether the rotation channels among ``channels`` (canonical names) make an Euler order BVH can hold: at most
    three, no axis twice in a row (``ZXY`` and ``ZXZ`` are orders, ``ZZX`` is none)."""
    rotations = [c[0] for c in channels if c.endswith("rotation")]
    return len(rotations) <= 3 and not any(a == b for a, b in itertools.pairwise(rotations))


def channel_list_problem(channels: Sequence[Any]) -> str | None:
    """Why a joint's list of channel names is no BVH layout (its names in any case), or ``None`` where it is one:
    the rules :func:`parse_bvh_bytes` reads ``CHANNELS`` lines by, for layouts that come from elsewhere (a glTF
    file's extras)."""
    if len(channels) > 6:
        return f"expected at most 6 channels, found {len(channels)}"
    canonical: list[str] = []
    for name in channels:
        found = CHANNEL_NAMES.get(name.lower()) if isinstance(name, str) else None
        if found is None:
            return f"expected channel names (X/Y/Z + position/rotation), found {name!r}"
        if found in canonical and found.endswith("position"):
            return f"channel {found} is listed twice"
        canonical.append(found)
    if not rotation_axes_allowed(canonical):
        return f"expected at most 3 rotation channels, no axis twice in a row (like ZXY or ZXZ), found {' '.join(canonical)}"
    return None


def _channels(tokens: _Tokens, owner: str) -> tuple[str, ...]:
    _, line = tokens.next("CHANNELS")  # errors about the list are reported at this line
    tok, ln = tokens.next(f"the channel count of {owner}")
    if not tok.isdigit() or not tok.isascii():
        raise tokens.error(f"expected the number of channels of {owner} (0 to 6), found {tok[:40]!r}", ln)
    count = int(tok)
    if count > 6:
        raise tokens.error(f"expected at most 6 channels for {owner}, found CHANNELS {count}", ln)
    names: list[str] = []
    for i in range(count):
        t, ln = tokens.peek()
        canonical = CHANNEL_NAMES.get(t.lower()) if t is not None else None
        if canonical is None:
            found = "the end of the hierarchy" if t is None else repr(t[:40])
            known = t is None or t.upper() in {"JOINT", "END", "}", "{", "OFFSET", "MOTION", "ROOT"}
            raise tokens.error(
                f"expected {count} channel names for {owner} (X/Y/Z + position/rotation), found {i} then "
                f"{'' if known else 'unknown channel '}{found}" + ("" if ln == line else f" (line {ln})"),
                line,
            )
        if canonical in names and canonical.endswith("position"):
            raise tokens.error(f"channel {canonical} is listed twice for {owner}", ln)
        names.append(canonical)
        tokens.pos += 1
    if not rotation_axes_allowed(names):
        raise tokens.error(
            f"expected at most 3 rotation channels for {owner}, no axis twice in a row (like ZXY or ZXZ), "
            f"found {' '.join(names)}",
            line,
        )
    return tuple(names)


def _expect(tokens: _Tokens, symbol: str, context: str) -> None:
    tok, line = tokens.next(f"'{symbol}' {context}")
    if tok != symbol:
        raise tokens.error(f"expected '{symbol}' {context}, found {tok[:40]!r}", line)


def _parse_hierarchy(tokens: _Tokens) -> tuple[list[str], list[int], list[np.ndarray], list[tuple[str, ...]],
                                                 dict[int, np.ndarray], dict[int, str], int,
                                                 list[tuple[str, int, int]]]:
    names: list[str] = []
    parents: list[int] = []
    offsets: list[np.ndarray] = []
    channels: list[tuple[str, ...]] = []
    end_sites: dict[int, np.ndarray] = {}
    end_site_names: dict[int, str] = {}
    extra_end_sites = 0
    renamed: list[tuple[str, int, int]] = []
    seen: dict[str, int] = {}
    tok, line = tokens.peek()
    if tok is not None and tok.upper() == "HIERARCHY":
        tokens.pos += 1
    stack: list[int] = []
    while True:
        tok, line = tokens.peek()
        if tok is None:
            if stack:
                raise tokens.error(
                    f"missing '}}': joint {names[stack[-1]]!r} is not closed ({len(stack)} open)", line
                )
            raise tokens.error("expected ROOT: the hierarchy has no joints", line)
        tokens.pos += 1
        key = tok.upper()
        if key in ("ROOT", "JOINT"):
            if key == "JOINT" and not stack:
                raise tokens.error("JOINT outside the ROOT's braces", line)
            if key == "ROOT" and stack:
                raise tokens.error("ROOT inside another joint", line)
            name = " ".join(tokens.rest_of_line(line))
            if not name:
                raise tokens.error(f"expected a joint name after {tok}", line)
            if name in seen:  # read, as other readers do, under a name of its own (as Blender renames)
                first = seen[name]
                name = next(f"{name}.{k:03d}" for k in range(1, len(seen) + 2) if f"{name}.{k:03d}" not in seen)
                renamed.append((name, line, first))
            seen[name] = line
            owner = f"joint {name!r}"
            _expect(tokens, "{", f"after {tok} {name}")
            offset: np.ndarray | None = None
            chans: tuple[str, ...] | None = None
            while True:  # OFFSET and CHANNELS, in either order
                t, ln = tokens.peek()
                up = None if t is None else t.upper()
                if up == "OFFSET" and offset is None:
                    offset = _offset(tokens, owner, name)
                elif up == "CHANNELS" and chans is None:
                    chans = _channels(tokens, owner)
                else:
                    break
            if offset is None:
                t, ln = tokens.peek()
                found = "the end of the hierarchy" if t is None else repr(t[:40])
                raise tokens.error(f"expected OFFSET x y z for {owner}, found {found}", ln)
            names.append(name)
            parents.append(stack[-1] if stack else -1)
            offsets.append(offset)
            channels.append(chans or ())
            stack.append(len(names) - 1)
        elif key == "END":
            if not stack:
                raise tokens.error("End Site outside any joint", line)
            label = " ".join([tok, *tokens.rest_of_line(line)])
            _expect(tokens, "{", f"after {label}")
            offset = _offset(tokens, f"the End Site of {names[stack[-1]]!r}", f"the End Site of {names[stack[-1]]}")
            _expect(tokens, "}", "to close the End Site (an End Site holds only an OFFSET)")
            if stack[-1] in end_sites:
                extra_end_sites += 1
            else:
                end_sites[stack[-1]] = offset
                end_site_names[stack[-1]] = label
        elif tok == "}":
            if not stack:
                raise tokens.error("unmatched '}'", line)
            stack.pop()
            following, _ = tokens.peek()
            if not stack and (following is None or following.upper() != "ROOT"):  # another ROOT: another figure
                break
        else:
            expected = "ROOT" if not names else "JOINT, End Site or '}'"
            hint = " (a channel name: does the CHANNELS count above match the names it lists?)" if (
                names and tok.lower() in CHANNEL_NAMES) else ""  # fmt: skip
            raise tokens.error(f"expected {expected}, found {tok[:40]!r}{hint}", line)
    tok, line = tokens.peek()
    if tok is not None:
        raise tokens.error(f"expected MOTION after the hierarchy, found {tok[:40]!r}", line)
    return names, parents, offsets, channels, end_sites, end_site_names, extra_end_sites, renamed


#: Name of the joint that :func:`parse_bvh_bytes` puts above the ROOTs of a file of several figures (``.001`` ...
#: appended where a joint of the file has it).
SCENE_ROOT = "Scene"


def _under_one_root(parsed: ParsedBVH) -> ParsedBVH:
    """A file of several ROOTs (figures: actors, props) as one tree: a joint without channels at the origin above
    them (:data:`SCENE_ROOT`), as Blender's importer puts them in one armature. The figures' roots keep their
    channels, now read as the animated translation of a joint whose parent stays at the origin, unturned: their
    world positions are those of the file. ``scene_root`` names the joint, and the writer leaves it out."""
    roots = int((parsed.parents < 0).sum())
    if roots < 2:
        return parsed
    taken = set(parsed.names)
    scene = next(n for n in (SCENE_ROOT, *(f"{SCENE_ROOT}.{k:03d}" for k in range(1, len(taken) + 2))) if n not in taken)
    parents = np.concatenate([[-1], np.where(parsed.parents < 0, 0, parsed.parents + 1)]).astype(np.int64)
    return replace(parsed, names=[scene, *parsed.names], parents=parents,
                   offsets=np.concatenate([np.zeros((1, 3)), parsed.offsets]), channels=[(), *parsed.channels],
                   end_sites={j + 1: v for j, v in parsed.end_sites.items()},
                   end_site_names={j + 1: v for j, v in parsed.end_site_names.items()}, scene_root=scene)  # fmt: skip


_CONTROL_RE = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f]")


def _decode_header(data: bytes, path: str) -> str:
    """The hierarchy as text; binary junk (control characters, non-UTF-8 bytes) is an error at its line."""
    if is_utf16(data):
        raise FormatError(UTF16_MESSAGE, path=path, line=1)
    control = _CONTROL_RE.search(data)
    end = control.start() if control else len(data)
    try:
        text = data[:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(
            f"expected text, found undecodable byte 0x{data[exc.start]:02x} (not UTF-8): is this a BVH file?",
            path=path,
            line=line,
        ) from None
    if control:
        line = data.count(b"\n", 0, end) + 1
        raise FormatError(
            f"expected text, found control character {control.group()!r}: is this a BVH file?", path=path, line=line
        )
    return text


def _number_after(match: re.Match[bytes] | None, what: str, line: int, path: str) -> str:
    if match is None or not match.group(1):
        raise FormatError(f"expected '{what}' followed by a number", path=path, line=line)
    return match.group(1).decode("ascii", "backslashreplace")


def normalize_bytes(data: bytes) -> bytes:
    """``data`` without a UTF-8 byte-order mark and with classic Mac line ends (``\\r`` only) made ``\\n``: the
    text whose ``\\n``-separated lines the parser numbers (``\\r\\n`` ends stay: a trailing ``\\r`` is blank)."""
    data = data.removeprefix(_BOM)
    if b"\n" not in data and b"\r" in data:
        data = data.replace(b"\r", b"\n")  # classic Mac line ends
    return data


def parse_bvh_bytes(data: bytes, path: str) -> ParsedBVH:
    """Parse a whole BVH file.

    Parameters
    ----------
    data:
        The file's bytes.
    path:
        Name used in error messages.

    Returns
    -------
    ParsedBVH
        Hierarchy, frame time and ``(F, C)`` channel values as written in the file.

    Raises
    ------
    FormatError
        Anything that is not a well-formed BVH file, with the line and what was expected.
    """
    data = normalize_bytes(data)
    if not data or data.isspace():  # (isspace stops at the first other byte; strip would copy)
        raise FormatError("empty file: expected HIERARCHY", path=path, line=1)
    if data.lstrip()[:1] == b"{":  # JSON: a DeepMimic clip or a .gltf named .bvh
        raise FormatError("expected HIERARCHY, found '{': it reads as JSON (a DeepMimic clip: name it .txt or .json; "
                          "a glTF: .gltf)", path=path, line=1)  # fmt: skip
    motion = _MOTION_RE.search(data)
    if motion is None:
        line = data.count(b"\n") + 1
        text = _decode_header(data, path)
        tokens = _Tokens(text, 1, path, line)
        _parse_hierarchy(tokens)  # raises on a truncated/broken hierarchy
        raise FormatError("expected MOTION after the hierarchy, found the end of the file", path=path, line=line)
    header_text = _decode_header(data[: motion.start()], path)
    motion_line = data.count(b"\n", 0, motion.start()) + 1
    tokens = _Tokens(header_text, 1, path, motion_line)
    names, parents, offsets, channels, end_sites, end_site_names, extra_end_sites, renamed = _parse_hierarchy(tokens)

    # "Frames:" and "Frame Time:" lines, skipping blank lines; the frames start on the next line
    pos, line = motion.end(), motion_line
    found: list[tuple[bytes, int]] = []
    while True:
        nl = data.find(b"\n", pos)
        nl = len(data) if nl < 0 else nl
        row = data[pos:nl]
        if row.strip():
            found.append((row, line))
        pos = nl + 1
        if len(found) == 2:
            break
        if nl >= len(data):
            what = "Frames:" if not found else "Frame Time:"
            raise FormatError(f"expected '{what}' after MOTION, found the end of the file", path=path, line=line)
        line += 1
    (frames_row, frames_line), (time_row, time_line) = found
    frames_tok = _number_after(_FRAMES_RE.match(frames_row), "Frames:", frames_line, path)
    if not frames_tok.isdigit() or not frames_tok.isascii():
        raise FormatError(f"expected a whole number of frames after 'Frames:', found {frames_tok[:40]!r}",
                          path=path, line=frames_line)
    frames = int(frames_tok)
    if frames == 0:
        raise FormatError("empty motion: 'Frames: 0' (expected at least one frame)", path=path, line=frames_line)
    time_tok = _number_after(_FRAME_TIME_RE.match(time_row), "Frame Time:", time_line, path)
    if NUMBER_RE.fullmatch(time_tok.encode("ascii", "replace")) is None:
        raise FormatError(f"expected seconds per frame after 'Frame Time:', found {time_tok[:40]!r}",
                          path=path, line=time_line)
    frame_time = float(time_tok)
    if not (frame_time > 0 and math.isfinite(frame_time) and math.isfinite(1.0 / frame_time)):
        raise FormatError(f"expected a positive 'Frame Time', found {time_tok[:40]}", path=path, line=time_line)
    if not MIN_FRAME_TIME <= frame_time <= MAX_FRAME_TIME:
        raise FormatError(f"expected a 'Frame Time' from {MIN_FRAME_TIME:g} to {MAX_FRAME_TIME:g} seconds (a million "
                          f"frames a second to one an hour), found {time_tok[:40]}", path=path, line=time_line)  # fmt: skip

    n_channels = sum(len(c) for c in channels)
    values, extra_frames = parse_motion_values(
        data, first_line=time_line + 1, channels=n_channels, frames=frames, path=path, frames_line=frames_line,
        start=min(pos, len(data)),
    )
    return _under_one_root(ParsedBVH(
        names=names,
        parents=np.array(parents, dtype=np.int64),
        offsets=np.stack(offsets),
        channels=channels,
        end_sites=end_sites,
        frame_time=frame_time,
        values=values,
        extra_end_sites=extra_end_sites,
        extra_frames=extra_frames,
        end_site_names=end_site_names,
        renamed=renamed,
    ))
