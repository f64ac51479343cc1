"""MindClaw's Observation module from pixels: each window of frames becomes the structured
observation its belief table is built from.

On the vision track (``obs_mode="rgb"``) an observation is the window's frames and
``info["candidates"]`` holds ids, names and classes only (docs/vision.md). MindClaw's
memory, Trigger, skills and reasoning read the text track's structured observation: the
window's events (``obs["events"]``, the event schema of
:func:`mindhelper_env.render.text.event_dict`) and the end-of-window snapshot
(``info["candidates"]`` with rooms, holdings, object locations and open states;
``info["doors"]``). The :class:`Eyes` turn frames into that observation, two ways:

``observe="vlm"`` (:class:`ModelEyes`) — the paper's Observation module: the model gets the
    window's frames (every frame, or a contact sheet: ``frames``), the id lists and the tick
    of each frame, and answers one JSON object (:func:`answer_schema`): the events it saw
    (``tick``, ``actor``, ``verb``, ``args`` as ids, ``room``) and what it sees at the end of
    the window (each person's room and holdings, where each visible object is, the
    containers it sees open and closed, the open doors; furniture never seen open or closed
    is no container). The schema's ids are enums of the episode's ids; it is sent as a
    constraint (client option ``structured``: ``json_schema`` sends it as
    ``response_format``, ``guided_json`` to vLLM; llama.cpp's server takes
    ``json_schema`` too) and every answer is validated against it with ``jsonschema``. An
    answer that does not validate, or a failed call, counts in ``usage.parse_failures`` /
    ``usage.fallbacks`` and the window is seen as empty (no events; the last snapshot
    kept): the result measures the model's eyes. One call per window. With ``legend=True``
    the picture legend (:mod:`mindhelper_env.render.legend`) is the first image of every
    call, counted in ``usage.images`` / ``usage.image_tokens`` like the frames.
``observe="pixels"`` (:class:`PixelEyes`) — the reference pixel parser
    (:mod:`mindhelper_env.perception`), which reads the frames exactly: MindClaw with perfect
    perception. No model call.

Then the belief table, the Trigger, the skills and Mental Reasoning run as on the text
track. Run both in one evaluation (``--agents mindclaw-vlm,mindclaw-pixels --obs rgb``)
to separate perception errors from reasoning errors (docs/vision.md).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from mindhelper_env.agents.base import Usage
from mindhelper_env.agents.frames import (
    FRAME_MODES,
    LEGEND_INTRO,
    frame_parts,
    id_lists,
    legend_image,
    window_frames,
)
from mindhelper_env.models.accounting import accounted_call
from mindhelper_env.models.answers import Constraint, find_json_object, load_template
from mindhelper_env.render.text import EVENT_VERBS, SIGHT_EVENT_VERBS

__all__ = ["OBSERVE_MODES", "Eyes", "ModelEyes", "PixelEyes", "answer_schema", "make_eyes"]

logger = logging.getLogger(__name__)

#: How MindClaw perceives: the text track's events, a model looking at the frames, or the
#: reference pixel parser.
OBSERVE_MODES = ("text", "vlm", "pixels")

_VERBS = tuple(dict.fromkeys((*EVENT_VERBS, *SIGHT_EVENT_VERBS)))


def _ids(c: Mapping[str, Any], key: str) -> list[int]:
    return [int(d["id"]) for d in c.get(key) or [] if isinstance(d, Mapping) and "id" in d]


def _enum(ids: list[int]) -> dict[str, Any]:
    return {"enum": sorted(set(ids))} if ids else {"type": "integer"}


def answer_schema(info: Mapping[str, Any], first_tick: int, last_tick: int) -> dict[str, Any]:
    """The JSON schema of the observation answer for one window of an episode (ids are
    enums of the episode's ids, ticks those of the window)."""
    c = info.get("candidates") or {}
    robot = (info.get("robot") or {}).get("id")
    people = _ids(c, "actors") + ([int(robot)] if isinstance(robot, int) else [])
    objects, places, rooms = _ids(c, "objects"), _ids(c, "locations"), _ids(c, "rooms")
    doors = _ids(c, "doors") or _ids({"doors": info.get("doors")}, "doors")
    any_id = _enum(people + objects + places + rooms)
    event = {"type": "object", "additionalProperties": False,
             "required": ["tick", "actor", "verb", "args", "room"],
             "properties": {
                 "tick": {"type": "integer", "minimum": first_tick, "maximum": last_tick},
                 "actor": _enum(people), "verb": {"enum": list(_VERBS)},
                 "args": {"type": "array", "maxItems": 3, "items": any_id},
                 "room": {"anyOf": [_enum(rooms), {"type": "null"}]}}}
    person = {"type": "object", "additionalProperties": False,
              "required": ["id", "room", "holding"],
              "properties": {"id": _enum(people), "room": _enum(rooms),
                             "holding": {"type": "array", "maxItems": 2,
                                         "items": _enum(objects)}}}
    thing = {"type": "object", "additionalProperties": False, "required": ["id", "at"],
             "properties": {"id": _enum(objects), "at": _enum(places + people)}}
    return {"type": "object", "additionalProperties": False,
            "required": ["events", "people", "objects", "open", "closed", "doors_open"],
            "properties": {
                "events": {"type": "array", "maxItems": 64, "items": event},
                "people": {"type": "array", "items": person},
                "objects": {"type": "array", "items": thing},
                "open": {"type": "array", "items": _enum(places)},
                "closed": {"type": "array", "items": _enum(places)},
                "doors_open": {"type": "array", "items": _enum(doors)}}}


class Eyes:
    """Frames in, the text track's ``(obs, info)`` out (see the module docstring)."""

    mode = "text"
    uses_model = False

    def __init__(self) -> None:
        """Eyes are built by :func:`make_eyes`; a subclass keeps its own state."""

    def reset(self) -> None:
        pass

    def see(self, obs: Any, info: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any],
                                                               list[Any]]:
        raise NotImplementedError


class _Snapshot:
    """The last end-of-window snapshot the eyes reported, rebuilt in the text track's shape
    from the episode's static ids (``info["candidates"]`` of the rgb track)."""

    def __init__(self) -> None:
        self.people: dict[int, dict[str, Any]] = {}
        self.where: dict[int, int] = {}
        self.open: set[int] = set()
        #: furniture seen open or closed at least once (containers)
        self.containers: set[int] = set()
        self.doors_open: set[int] = set()

    def update(self, answer: Mapping[str, Any]) -> None:
        self.people = {int(p["id"]): {"room": p["room"], "holding": list(p["holding"])}
                       for p in answer["people"]}
        self.where = {int(o["id"]): int(o["at"]) for o in answer["objects"]}
        for pid, p in self.people.items():
            self.where.update({int(h): pid for h in p["holding"]})
        self.open = {int(i) for i in answer["open"]}
        self.containers |= self.open | {int(i) for i in answer["closed"]}
        self.doors_open = {int(i) for i in answer["doors_open"]}

    def info(self, info: Mapping[str, Any]) -> dict[str, Any]:
        c = info.get("candidates") or {}
        rooms_of = {int(loc["id"]): loc.get("room") for loc in c.get("locations") or []}
        actors = []
        for a in c.get("actors") or []:
            p = self.people.get(int(a["id"]), {})
            actors.append({"id": a["id"], "name": a.get("name", str(a["id"])),
                           "kind": a.get("kind", "adult"), "room": p.get("room"),
                           "holding": list(p.get("holding", []))})
        room_of_person = {a["id"]: a["room"] for a in actors}
        classes = {int(o["id"]): o.get("class", "?") for o in c.get("objects") or []}
        objects = []
        for oid in sorted(self.where):
            at = self.where[oid]
            room = room_of_person.get(at) if at in room_of_person else rooms_of.get(at)
            objects.append({"id": oid, "class": classes.get(oid, "?"), "location": at,
                            "room": room})
        locations = [{**dict(loc), "open": (int(loc["id"]) in self.open)
                      if int(loc["id"]) in self.containers else None}
                     for loc in c.get("locations") or []]
        robot = dict(info.get("robot") or {})
        rid = robot.get("id")
        if isinstance(rid, int) and rid in self.people:
            robot.update(room=self.people[rid]["room"], holding=self.people[rid]["holding"])
        doors = [{"id": d["id"], "rooms": list(d.get("rooms") or []),
                  "open": int(d["id"]) in self.doors_open}
                 for d in (c.get("doors") or info.get("doors") or [])]
        cands = {"actors": actors, "objects": objects, "locations": locations,
                 "rooms": [dict(r) for r in c.get("rooms") or []]}
        return {**{k: v for k, v in info.items() if k != "candidates"},
                "candidates": cands, "doors": doors, "robot": robot}


def _event_dicts(raw: list[Mapping[str, Any]], info: Mapping[str, Any],
                 snapshot: _Snapshot) -> list[dict[str, Any]]:
    """The answer's events in the text track's event schema (classes and names from the
    candidates; an ``open`` lists what the snapshot puts in the container)."""
    c = info.get("candidates") or {}
    names = {int(a["id"]): str(a.get("name", a["id"])) for a in c.get("actors") or []}
    classes = {int(d["id"]): str(d.get("class", "?")) for k in ("objects", "locations", "rooms")
               for d in c.get(k) or []}
    classes.update({i: "character" for i in names})
    robot = (info.get("robot") or {}).get("id")
    if isinstance(robot, int):
        names.setdefault(robot, "robot")
        classes[robot] = "character"
    out = []
    for ev in sorted(raw, key=lambda e: int(e["tick"])):
        d: dict[str, Any] = {
            "tick": int(ev["tick"]), "actor": int(ev["actor"]),
            "actor_name": names.get(int(ev["actor"]), str(ev["actor"])), "verb": ev["verb"],
            "args": [{"id": int(x), "class": classes.get(int(x), "?")} for x in ev["args"]],
            "room": ev["room"]}
        if ev["verb"] == "open" and ev["args"]:
            box = int(ev["args"][0])
            d["contents"] = [{"id": o, "class": classes.get(o, "?")}
                             for o, at in sorted(snapshot.where.items()) if at == box]
        out.append(d)
    return out


class ModelEyes(Eyes):
    """``observe="vlm"``: the model turns each window's frames into events and a snapshot."""

    mode = "vlm"
    uses_model = True

    def __init__(self, client: Any, usage: Usage, *, frames: str = "all",
                 max_tokens: int = 1024, legend: bool = False, legend_scale: int = 3) -> None:
        if frames not in FRAME_MODES:
            raise ValueError(f"frames must be one of {FRAME_MODES}, got {frames!r}")
        #: the picture legend, the first image of every request (``legend=True``), or None
        self.legend = legend_image(legend, legend_scale)
        self.client = client
        self.usage = usage
        self.frames = frames
        self.max_tokens = int(max_tokens)
        self.template = load_template("mindclaw-observation-rgb.json")
        self.snapshot = _Snapshot()

    def reset(self) -> None:
        self.snapshot = _Snapshot()

    def see(self, obs: Any, info: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any],
                                                               list[Any]]:
        import jsonschema

        from mindhelper_env.agents.mindclaw.reasoning import Call

        n = len(window_frames(obs))
        now = int(info.get("tick", 0))  # the tick after the window: its ticks are now-n..now-1
        first = max(0, now - n)
        last = max(first, now - 1)
        schema = answer_schema(info, first, last)
        places, things = id_lists(info)
        images, intro = frame_parts(obs, self.frames)
        ticks = f"tick {last}" if first == last else f"ticks {first} to {last}, one a frame"
        if self.legend is not None:
            images = [self.legend, *images]
            intro = LEGEND_INTRO + intro
        system, user = self.template.render(places=places, candidates=things,
                                            ticks=ticks, images=intro)
        call = Call("observation", len(system) + len(user), prompt=self.template.version)
        self.usage.prompts.setdefault("mindclaw.observation", self.template.version)
        answer, _kind = accounted_call(
            self.client, self.usage,
            [{"role": "system", "content": system}, {"role": "user", "content": [user, *images]}],
            max_tokens=self.max_tokens, temperature=0.0,
            constraint=Constraint(schema, None, None, "window_observation")
            if getattr(self.client, "structured", None) else None,
            who="mindclaw observation")
        events: list[dict[str, Any]] = []
        if answer is None:
            call.outcome = "call_failed"
            self.usage.count_source("failed")
        else:
            call.prompt_tokens = answer.prompt_tokens
            call.completion_tokens = answer.completion_tokens
            call.answer = answer.text
            obj = find_json_object(answer.text)
            problem = "no JSON object in the answer" if obj is None else None
            if obj is not None:
                try:
                    jsonschema.validate(obj, schema)
                except jsonschema.ValidationError as err:
                    problem = f"{err.message} at {'/'.join(map(str, err.absolute_path))}"
            if problem is None:
                self.snapshot.update(obj)
                events = _event_dicts(obj["events"], info, self.snapshot)
                self.usage.count_source("model")
            else:
                self.usage.parse_failures += 1
                self.usage.count_source("failed")
                call.outcome = "parse_failure"
                logger.info("mindclaw observation: unusable answer (%s)", problem)
        text_obs = {"events": json.dumps(events), "narration": "", "tick": now}
        return text_obs, self.snapshot.info(info), [call]


class PixelEyes(Eyes):
    """``observe="pixels"``: the reference pixel parser (:mod:`mindhelper_env.perception`),
    as :class:`~mindhelper_env.agents.perceive.PixelFed` feeds any text agent."""

    mode = "pixels"

    def __init__(self) -> None:
        from mindhelper_env.perception import PixelPerception

        self._make = PixelPerception
        self.parser = PixelPerception()
        self._first = True

    @property
    def perception_stats(self) -> dict[str, int]:
        return dict(self.parser.stats)

    def reset(self) -> None:
        self.parser = self._make()
        self._first = True

    def see(self, obs: Any, info: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any],
                                                               list[Any]]:
        from mindhelper_env.perception import text_view

        frames = window_frames(obs)
        arr = np.stack(frames)
        if self._first:
            perceived = self.parser.reset(arr, dict(info))
            self._first = False
        else:
            perceived = self.parser.observe(arr, dict(info))
        text_obs, text_info = text_view(perceived, dict(info))
        return dict(text_obs), dict(text_info), []


def make_eyes(observe: str, client: Any, usage: Usage, *, frames: str = "all",
              max_tokens: int = 1024, legend: bool = False,
              legend_scale: int = 3) -> Eyes | None:
    """The eyes of ``observe`` (None for ``"text"``); ValueError for an unknown mode,
    ``"vlm"`` without a model, or ``legend=True`` with eyes that send no frames (only
    ``"vlm"`` sends pictures to a model)."""
    if observe not in OBSERVE_MODES:
        raise ValueError(f"observe must be one of {OBSERVE_MODES}, got {observe!r}")
    legend_image(legend, legend_scale)  # the option's check
    if legend and observe != "vlm":
        raise ValueError(f"legend=true sends the picture legend with the frames a model "
                         f"sees: it needs observe='vlm', got observe={observe!r}")
    if observe == "text":
        return None
    if observe == "pixels":
        return PixelEyes()
    if client is None:
        raise ValueError("observe='vlm' needs a model (model='openai:MODEL@URL', or "
                         "$MINDHELPER_MODEL); observe='pixels' needs none")
    return ModelEyes(client, usage, frames=frames, max_tokens=max_tokens, legend=legend,
                     legend_scale=legend_scale)
