"""The pixel-perception reference (``mindhelper_env.perception``) and ``observe="pixels"``.

Episodes are played twice in lockstep with the same actions, in ``obs_mode="text"`` and
``obs_mode="rgb"``: the parser must read every text event of every window from the frames
alone (the same ``(tick, actor, verb, arg ids, room, contents)``), and the state it reads
must be the state text mode's ``info`` gives; the belief tracker fed by pixels must decide
as the text tracker does. The layout rule (perception imports nothing of world, actors,
scenarios) is in ``tests/test_layout.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from mindhelper_env.agents import make_agent
from mindhelper_env.agents.perceive import PixelFed
from mindhelper_env.evaluation.episode import make_env, run_episode, suite_env_id
from mindhelper_env.perception import (
    MIN_FRAME_SIZE,
    EventScore,
    PerceptionError,
    PixelPerception,
    text_view,
)

SIZE = MIN_FRAME_SIZE  # at least every v4 episode's lossless frame size


def _state(info: dict) -> dict:
    """The state fields of a text-mode info (what rgb mode leaves out)."""
    c = info["candidates"]
    return {
        "actors": {a["id"]: (a["room"], list(a["holding"])) for a in c["actors"]},
        "objects": {o["id"]: (o["location"], o["room"]) for o in c["objects"]},
        "open": {loc["id"]: loc["open"] for loc in c["locations"]},
        "robot": (info["robot"]["room"], list(info["robot"]["holding"])),
        "doors": [(d["id"], d["open"]) for d in info.get("doors", [])],
    }


def _lockstep(suite: str, index: int) -> tuple[EventScore, list[str], int]:
    """Play one episode in text and rgb with the text tracker's actions; score the parser."""
    env_id = suite_env_id(suite)
    text_env, rgb_env = make_env(env_id), make_env(env_id, obs_mode="rgb", frame_size=SIZE)
    driver = make_agent("belief-tracker")
    opts = {"suite": suite, "index": index}
    tobs, tinfo = text_env.reset(options=opts)
    frames, rinfo = rgb_env.reset(options=opts)
    driver.reset()
    perception = PixelPerception()
    perceived = perception.reset(frames, rinfo)
    score, state_errors, events = EventScore(), [], 0
    while True:
        if _state(text_view(perceived, rinfo)[1]) != _state(tinfo):
            state_errors.append(f"tick {tinfo['tick']}")
        action = driver.act(tobs, tinfo)
        tobs, _, t1, t2, tinfo = text_env.step(action)
        frames, _, r1, r2, rinfo = rgb_env.step(action)
        assert (t1 or t2) == (r1 or r2)
        perceived = perception.observe(frames, rinfo)
        score.add(tinfo["events"], perceived.events)
        events += len(tinfo["events"])
        if t1 or t2:
            break
    assert perception.stats["unreadable"] == 0
    overflow = rgb_env.unwrapped.vision.renderer.stats["overflow"]
    assert overflow == 0, f"{overflow} items found no slot: the frames show less than the text"
    return score, state_errors, events


# vh-dev-v4 #0, #2: the robot walks to a person (a walk balloon); #4: four people in one
# room at reset; vh-test-v4 #233: a wineglass put in a fridge that someone closes at the
# same tick (not drawn afterwards)
@pytest.mark.parametrize("suite,index", [("vh-dev-v4", 0), ("vh-dev-v4", 2), ("vh-dev-v4", 4),
                                         ("vh-test-v4", 233)])
def test_the_parser_reads_every_event_and_the_state(suite: str, index: int) -> None:
    score, state_errors, events = _lockstep(suite, index)
    assert events > 10  # the episode has something to read
    assert not score.missed, f"text events the parser missed: {score.missed}"
    assert not score.spurious, f"events the parser made up: {score.spurious}"
    assert not state_errors, f"windows whose perceived state differs: {state_errors}"


# more objects on (or in) one piece of furniture than a row has object slots: the rest are
# drawn in the spill rows (sprites v5); before, they were not drawn at all
@pytest.mark.parametrize("suite,index", [("vh-test-v4", 173), ("vh-test-v4", 220),
                                         ("vh-test-v4", 438), ("tdw-test-v4", 465),
                                         ("tdw-test-v4", 732)])
def test_objects_beyond_a_rows_slots_are_drawn_and_read(suite: str, index: int) -> None:
    score, state_errors, _ = _lockstep(suite, index)  # asserts no overflow
    assert not score.missed and not score.spurious, (score.missed, score.spurious)
    assert not state_errors, f"windows whose perceived state differs: {state_errors}"


def test_the_parser_reads_every_event_of_a_tdw_episode() -> None:
    score, state_errors, _ = _lockstep("tdw-dev-v4", 1)
    assert not score.missed and not score.spurious, (score.missed, score.spurious)
    assert not state_errors


@pytest.mark.parametrize("suite,index", [("vh-dev-v4", 0), ("vh-dev-v4", 5), ("tdw-dev-v4", 3)])
def test_the_pixel_fed_tracker_decides_as_the_text_tracker(suite: str, index: int) -> None:
    env_id = suite_env_id(suite)
    opts = {"suite": suite, "index": index}
    text = run_episode(make_env(env_id), make_agent("belief-tracker"), options=opts,
                       timing=False)
    agent = make_agent("belief-tracker", observe="pixels")
    pixels = run_episode(make_env(env_id, obs_mode="rgb", frame_size=SIZE), agent,
                         options=opts, timing=False)
    assert isinstance(agent, PixelFed) and agent.perception_stats["windows"] > 1
    assert text["actions"], "the text tracker acts in this episode"
    assert [(a["tick"], a["program"]) for a in pixels["actions"]] == \
        [(a["tick"], a["program"]) for a in text["actions"]]
    assert pixels["belief"]["agent"] == text["belief"]["agent"]
    assert pixels["usage"]["fallbacks"] == 0


def test_observe_is_an_option_of_every_text_agent() -> None:
    assert isinstance(make_agent("belief-tracker", observe="pixels"), PixelFed)
    assert not isinstance(make_agent("belief-tracker", observe="text"), PixelFed)
    hedged = make_agent("physical-rules+wait3", observe="pixels")
    assert isinstance(hedged, PixelFed)  # perception outermost: the hedge reads text too
    assert type(hedged.inner).__name__ != "PixelFed"
    assert hedged.name == hedged.inner.name  # the row keeps the agent's name
    with pytest.raises(ValueError, match="observe must be one of"):
        make_agent("coarse-mind", observe="eyes")


def test_pixels_on_a_text_env_is_a_clear_error() -> None:
    env = make_env("MindHelper-VirtualHome-v2")
    obs, info = env.reset(options={"suite": "vh-dev-v4", "index": 0})
    agent = make_agent("belief-tracker", observe="pixels")
    agent.reset()
    with pytest.raises(ValueError, match="obs_mode='rgb'"):
        agent.act(obs, info)


def test_frames_too_small_for_the_layout_are_refused_with_the_size_to_use() -> None:
    env = make_env("MindHelper-VirtualHome-v2", obs_mode="rgb", frame_size=128)
    frames, info = env.reset(options={"suite": "tdw-dev-v4", "index": 0})
    with pytest.raises(PerceptionError, match=r"frame_size >= \d+"):
        PixelPerception().reset(frames, info)
    with pytest.raises(PerceptionError, match="uint8"):
        PixelPerception().reset(frames[0], info)


def test_unreadable_pixels_are_counted_not_raised() -> None:
    env = make_env("MindHelper-VirtualHome-v2", obs_mode="rgb", frame_size=SIZE)
    frames, info = env.reset(options={"suite": "vh-dev-v4", "index": 1})
    p = PixelPerception()
    clean = p.reset(frames, info)
    assert clean.unreadable == 0 and clean.state.rooms
    frames, _, _, _, info = env.step("none")
    noisy = frames.copy()
    rng = np.random.default_rng(0)
    noisy[:, ::3, ::3] = rng.integers(0, 256, noisy[:, ::3, ::3].shape, dtype=np.uint8)
    got = p.observe(noisy, info)
    assert got.unreadable > 0 and p.stats["unreadable"] == got.unreadable


def test_event_score_counts_per_verb() -> None:
    def ev(tick, verb, *args, room=5, contents=None):
        d = {"tick": tick, "actor": 7, "verb": verb, "args": [{"id": a, "class": "x"} for a in args],
             "room": room}
        if contents is not None:
            d["contents"] = [{"id": c, "class": "x"} for c in contents]
        return d

    s = EventScore()
    s.add([ev(1, "walk", 3), ev(2, "open", 9, contents=[4, 2]), ev(3, "grab", 4)],
          [ev(1, "walk", 3), ev(2, "open", 9, contents=[2, 4]), ev(3, "grab", 2),
           ev(3, "look", 9)])
    t = s.table()
    assert t["walk"]["precision"] == t["walk"]["recall"] == 1.0
    assert t["open"]["tp"] == 1  # contents compare as a set
    assert (t["grab"]["tp"], t["grab"]["fp"], t["grab"]["fn"]) == (0, 1, 1)
    assert t["look"]["precision"] == 0.0 and t["look"]["recall"] == 1.0
    assert s.total.tp == 2 and s.total.fp == 2 and s.total.fn == 1


def test_the_parser_reads_the_sprites_version_the_renderer_draws() -> None:
    from mindhelper_env.perception.parser import READS_SPRITES_VERSION
    from mindhelper_env.render import sprites

    assert sprites.SPRITES_VERSION == READS_SPRITES_VERSION, (
        "render/sprites.py changed its picture language: update perception/parser.py and "
        "READS_SPRITES_VERSION")


def test_the_frames_show_kinds_and_poses_as_the_candidates_and_events_say() -> None:
    env = make_env("MindHelper-VirtualHome-v2", obs_mode="rgb", frame_size=SIZE)
    frames, info = env.reset(options={"suite": "vh-dev-v4", "index": 0})
    p = PixelPerception()
    state = p.reset(frames, info).state
    kinds = {a["id"]: a["kind"] for a in info["candidates"]["actors"]}
    assert {pid: state.kinds[pid] for pid in kinds} == kinds
    assert state.kinds[info["robot"]["id"]] == "robot"
    phone_seen = False
    for _ in range(8):  # Tara takes a call at tick 9 and hangs up at tick 22
        frames, _, _, _, info = env.step("none")
        seen = p.observe(frames, info)
        calls = {e["actor"] for e in seen.events if e["verb"] == "phone"}
        for pid in calls:
            assert "phone" in seen.state.poses[pid].split("+")
            phone_seen = True
    assert phone_seen


def test_a_move_balloon_is_an_event_of_no_one_seen() -> None:
    # no v4 episode moves an object unseen (older generators' background events do): the
    # balloon alone, with no actor, makes the event
    from mindhelper_env.perception.parser import FrameRead

    env = make_env("MindHelper-VirtualHome-v2", obs_mode="rgb", frame_size=SIZE)
    frames, info = env.reset(options={"suite": "vh-dev-v4", "index": 0})
    p = PixelPerception()
    p.reset(frames, info)
    before = FrameRead()
    after = FrameRead(balloons=[(203, "move", -1, -1, 19, 13)])
    events, bad = p._events(before, after, 7)
    assert bad == 0
    assert events == [{"tick": 7, "actor": 0, "actor_name": "Someone", "verb": "move",
                       "args": [{"id": 19, "class": "glasses"},
                                {"id": 13, "class": "bathroomcounter"}], "room": 203}]


def test_a_user_agent_by_import_path_takes_observe_too() -> None:
    agent = make_agent("mindhelper_env.agents.belief:BeliefTrackerAgent", observe="pixels")
    assert isinstance(agent, PixelFed) and agent.name == "belief-tracker"


def test_a_window_cut_short_reads_only_the_ticks_that_happened() -> None:
    # max_ticks cuts the last window: the frames after the end repeat the last one, glyphs
    # and all, and must not read as events again
    opts = {"suite": "vh-dev-v4", "index": 0}
    text_env = make_env("MindHelper-VirtualHome-v2", max_ticks=10)
    rgb_env = make_env("MindHelper-VirtualHome-v2", obs_mode="rgb", frame_size=SIZE, max_ticks=10)
    text_env.reset(options=opts)
    frames, info = rgb_env.reset(options=opts)
    p = PixelPerception()
    p.reset(frames, info)
    score = EventScore()
    while True:
        _, _, t1, t2, tinfo = text_env.step("none")
        frames, _, _, _, info = rgb_env.step("none")
        score.add(tinfo["events"], p.observe(frames, info).events)
        if t1 or t2:
            break
    assert info["tick"] == 10 and p.stats["frames"] == 1 + 10
    assert not score.missed and not score.spurious and score.total.tp > 0
