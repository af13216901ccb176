"""The side view of the pose strip and the video's camera side follow the way a body faces where it stays in place
(``viz._draw.view_direction``; found by a read-only review: the path of a bow or a wave is sway, which had put the
video's camera behind the actor in 15 of the 55 Bandai-Namco takes that travel under 30 cm, and the strip's "side
view" of a bow near the front). Where the body travels a height or more, the travel decides, as before. The
reference: the hips' facing worked out here, left thigh minus right thigh crossed with up, mean over the clip."""

from __future__ import annotations

import numpy as np

import skelanim
from skelanim.viz._draw import skeleton_figure, travel_direction, view_direction

BOW = "bandai_namco_1/dataset-1_bow_feminine_001.bvh"
WALK = "bandai_namco_1/dataset-1_walk_normal_001.bvh"


def hips_facing(motion: skelanim.Motion) -> np.ndarray:
    names = motion.skeleton.names
    p = motion.positions().numpy()
    across = p[:, names.index("UpperLeg_L")] - p[:, names.index("UpperLeg_R")]
    facing = np.cross(across, [0.0, 1.0, 0.0])
    facing[:, 1] = 0.0
    mean = (facing / np.linalg.norm(facing, axis=-1, keepdims=True)).mean(0)
    return mean / np.linalg.norm(mean)


def test_a_bow_in_place_is_seen_across_its_facing_and_a_walk_across_its_travel(mocap_files) -> None:
    bow, walk = (skelanim.load(p) for p in mocap_files([BOW, WALK]))
    figure = skeleton_figure(bow)
    # the facing of hips and shoulders together (ops.facing_directions) is 13 degrees from the hips' alone here
    assert np.degrees(np.arccos(np.clip(view_direction(figure) @ hips_facing(bow), -1, 1))) < 20.0
    sway = travel_direction(figure.centre, figure.up)
    assert np.degrees(np.arccos(abs(sway @ hips_facing(bow)))) > 30.0  # what the sway had given: nowhere near
    figure = skeleton_figure(walk)
    assert np.allclose(view_direction(figure), travel_direction(figure.centre, figure.up))
    assert view_direction(figure) @ hips_facing(walk) > 0.9  # a walk faces the way it goes


def test_the_video_camera_looks_at_a_bowing_actor_from_its_front_side(mocap_files) -> None:
    """The camera stands to the side, turned 30 degrees towards the front: its direction from the body to the eye
    (``view_dir``, :func:`~skelanim.viz._draw.follow_camera`) has a positive share along the facing, sin 30 = 0.5
    give or take the 13 degrees between two measures of the facing (the sway had put it behind: -0.96 here)."""
    from skelanim.viz.video import _Panel, frame_indices

    bow = skelanim.load(mocap_files([BOW])[0])
    figure = skeleton_figure(bow)
    panel = _Panel([(0, figure, frame_indices(bow, 30.0, 40), "bow")], 30.0, 40)
    assert 0.25 < float(panel.view_dir @ hips_facing(bow)) < 0.75


def test_the_contact_timeline_spans_the_whole_clip(mocap_files) -> None:
    """``plot -k contacts``: the time axis runs from 0 to the clip's span, F / fps (a review: the DeepMimic crawl's one
    contact frame had filled the axis, 1.4667-1.4833 s, and a joint with no contact had spanned -0.04 to 0.04 s)."""
    from skelanim.viz.plots import plot_contacts

    crawl = skelanim.load(mocap_files(["deepmimic/humanoid3d_crawl.txt"])[0])
    for joints in (None, ["left_elbow", "right_elbow"]):
        figure = plot_contacts(crawl, joints)
        assert figure.axes[0].get_xlim() == (0.0, crawl.num_frames / crawl.fps)


def test_video_frames_are_the_nearest_source_frames_ties_to_the_later() -> None:
    """Output frame ``k`` at ``k / fps`` shows the source frame ``floor(k fps_src / fps + 1/2)``, as the viewer's
    ``Math.round`` does: 30 fps shown at 20 steps 2, 1, 2, 1 (round-to-even had given 2, 1, 1, 2, 2, 1, 1, 2)."""
    import torch

    from skelanim import Motion, Skeleton
    from skelanim.viz.video import frame_indices

    still = Motion.rest(Skeleton(["a"], np.array([-1]), torch.zeros(1, 3, dtype=torch.float64)), 100, fps=30.0)
    assert frame_indices(still, 20.0, 9).tolist() == [0, 2, 3, 5, 6, 8, 9, 11, 12]  # k * 1.5, halves up
    assert frame_indices(still, 12.0, 5).tolist() == [0, 3, 5, 8, 10]  # k * 2.5
    assert frame_indices(still, 20.0, 100)[-1] == 99  # clamped to the last frame
