"""A small URDF reader: the kinematic tree (links, joints, joint origins and axes), nothing else.

Only what skeleton animation needs is read: each ``<joint>``'s name, type, parent and child link,
``<origin xyz rpy>`` and ``<axis xyz>``. Inertia, geometry, limits and materials are ignored. Parsing
uses :mod:`xml.etree.ElementTree`, so only plain XML is accepted (no xacro macros).

URDF conventions: lengths in metres (times the loader's scale), ``rpy`` in radians (fixed-axis
roll-pitch-yaw), ``axis`` in the joint frame, defaulting to ``(1, 0, 0)``.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from skelanim.errors import FormatError

#: URDF joint types this reader recognises.
JOINT_TYPES = ("fixed", "revolute", "continuous", "prismatic", "floating", "planar", "spherical")


@dataclass(frozen=True)
class UrdfJoint:
    """One ``<joint>`` element.

    Attributes
    ----------
    name:
        The joint's ``name`` attribute.
    type:
        One of :data:`JOINT_TYPES` (``spherical`` is a Bullet extension).
    parent, child:
        Link names.
    xyz:
        ``(3,)`` origin translation in the parent link's frame, unscaled.
    rpy:
        ``(3,)`` origin roll, pitch, yaw in radians.
    axis:
        ``(3,)`` joint axis in the joint frame (as written, not normalised).
    """

    name: str
    type: str
    parent: str
    child: str
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)


@dataclass(frozen=True)
class UrdfModel:
    """The kinematic tree of a URDF file.

    Attributes
    ----------
    name:
        The ``<robot name>``.
    links:
        Link names in file order.
    joints:
        Joints in file order.
    path:
        The file it came from (for error messages), or ``None``.
    """

    name: str
    links: tuple[str, ...]
    joints: tuple[UrdfJoint, ...]
    path: str | None = None

    def joint_to(self, link: str) -> UrdfJoint | None:
        """The joint whose child is ``link`` (``None`` for the root link)."""
        for joint in self.joints:
            if joint.child == link:
                return joint
        return None

    def joints_from(self, link: str) -> list[UrdfJoint]:
        """Joints whose parent is ``link``, in file order."""
        return [j for j in self.joints if j.parent == link]


def _vector(
    element: ET.Element | None, attribute: str, default: tuple[float, float, float], *, path: str, where: str
) -> tuple[float, float, float]:
    if element is None or element.get(attribute) is None:
        return default
    text = element.get(attribute, "")
    parts = text.split()
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        raise FormatError(f"{attribute}={text!r}: expected three finite numbers", path=path, where=where)
    return values


def parse_urdf(path: str | os.PathLike) -> UrdfModel:
    """Read the kinematic tree of a URDF file.

    Parameters
    ----------
    path:
        A ``.urdf`` file.

    Returns
    -------
    UrdfModel
        Links and joints in file order.

    Raises
    ------
    FormatError
        Malformed XML (with its line; trailing NUL bytes are ignored), a missing attribute, an unknown
        joint type, a joint naming an unknown link, a link with two parent joints, or a tree with no
        single root.
    """
    where_file = str(path)
    # Trailing NUL bytes occur in the wild (pybullet's humanoid.urdf ends with one); pybullet ignores them.
    raw = Path(path).read_bytes().rstrip(b"\x00 \t\r\n")
    try:
        robot = ET.fromstring(raw)
    except ET.ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        raise FormatError(f"invalid XML: {exc}", path=where_file, line=line) from None
    if robot.tag != "robot":
        raise FormatError(f"expected a <robot> root element, found <{robot.tag}>", path=where_file)

    links: list[str] = []
    for element in robot.findall("link"):
        name = element.get("name")
        if not name:
            raise FormatError("a <link> has no name", path=where_file, where=f"link {len(links)}")
        if name in links:
            raise FormatError(f"duplicate link {name!r}", path=where_file)
        links.append(name)

    joints: list[UrdfJoint] = []
    seen_children: dict[str, str] = {}
    for index, element in enumerate(robot.findall("joint")):
        name = element.get("name") or ""
        where = f"joint {name!r}" if name else f"joint {index}"
        jtype = element.get("type") or ""
        if not name:
            raise FormatError("a <joint> has no name", path=where_file, where=where)
        if jtype not in JOINT_TYPES:
            raise FormatError(
                f"unknown joint type {jtype!r}; expected one of {', '.join(JOINT_TYPES)}", path=where_file, where=where
            )
        parent_el, child_el = element.find("parent"), element.find("child")
        parent = parent_el.get("link") if parent_el is not None else None
        child = child_el.get("link") if child_el is not None else None
        if not parent or not child:
            raise FormatError("needs <parent link=...> and <child link=...>", path=where_file, where=where)
        for role, link in (("parent", parent), ("child", child)):
            if link not in links:
                raise FormatError(f"{role} link {link!r} is not defined", path=where_file, where=where)
        if child in seen_children:
            raise FormatError(
                f"link {child!r} is already the child of joint {seen_children[child]!r}", path=where_file, where=where
            )
        seen_children[child] = name
        origin = element.find("origin")
        joints.append(
            UrdfJoint(
                name=name,
                type=jtype,
                parent=parent,
                child=child,
                xyz=_vector(origin, "xyz", (0.0, 0.0, 0.0), path=where_file, where=where),
                rpy=_vector(origin, "rpy", (0.0, 0.0, 0.0), path=where_file, where=where),
                axis=_vector(element.find("axis"), "xyz", (1.0, 0.0, 0.0), path=where_file, where=where),
            )
        )

    roots = [link for link in links if link not in seen_children]
    if not links:
        raise FormatError("the robot has no <link> elements", path=where_file)
    if len(roots) != 1:
        raise FormatError(
            f"expected one root link, found {len(roots)} ({', '.join(roots) or 'a cycle'})", path=where_file
        )
    model = UrdfModel(robot.get("name", ""), tuple(links), tuple(joints), where_file)
    # every link must hang off the root (no cycles)
    reached, frontier = {roots[0]}, [roots[0]]
    while frontier:
        link = frontier.pop()
        for joint in model.joints_from(link):
            if joint.child not in reached:
                reached.add(joint.child)
                frontier.append(joint.child)
    if len(reached) != len(links):
        missing = [link for link in links if link not in reached]
        raise FormatError(f"links not connected to the root {roots[0]!r}: {', '.join(missing)}", path=where_file)
    return model
