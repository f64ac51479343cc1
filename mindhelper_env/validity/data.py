"""Silent rollouts and observable episode features for the validity instruments.

:func:`episode_data` rolls an episode out with the robot silent (what any agent sees until it
first acts) and extracts every window's tokens and label, the cue-time narration and
:data:`FEATURES` (over a hundred observable episode features, computed from ``obs`` and
``info`` only); :func:`suite_data` and :func:`training_data` do it for a suite and for
training-seed episodes (:func:`training_episodes`). The classifiers, the feature scan and
the bounds that use them are in :mod:`mindhelper_env.validity.core`; the package
:mod:`mindhelper_env.validity` re-exports these names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mindhelper_env.agents.tracker import BeliefTracker

__all__ = ["WORDS", "window_tokens", "EpisodeData", "episode_data", "FEATURES",
           "SCAN_BOUNDED_KINDS", "suite_data", "training_data", "training_episodes"]

_TOKEN = re.compile(r"[a-z]+")


def _tokens(text: str) -> list[str]:
    # digits are dropped: ids are shuffled and carry nothing but noise
    return _TOKEN.findall(text.lower())


def _group(family: str) -> str | None:
    from mindhelper_env.scenarios.spec import twin_group

    return twin_group(family)


def training_episodes(n: int, seed: int = 0, house: Any = None,
                      generator: str | None = None) -> list[dict[str, Any]]:
    """``n`` episodes from training seeds, half of them needing help, families drawn as the
    envs and suites of ``generator`` draw them
    (:func:`~mindhelper_env.scenarios.spec.family_weights`; default: the current generator),
    set in ``house`` (see :func:`~mindhelper_env.world.houses.resolve_houses`)."""
    from mindhelper_env.scenarios.generator import generate_episode
    from mindhelper_env.scenarios.spec import HELP_FAMILIES, family_weights
    from mindhelper_env.scenarios.suites import TRAINING_SEED_RANGE

    weights = family_weights(generator)
    rng = np.random.default_rng(seed)
    sides = [[f for f in weights if f in HELP_FAMILIES],
             [f for f in weights if f not in HELP_FAMILIES]]
    out = []
    for i in range(n):
        side = sides[i % 2]
        w = np.array([weights[f] for f in side])
        fam = side[int(rng.choice(len(side), p=w / w.sum()))]
        out.append(generate_episode(fam, int(rng.integers(TRAINING_SEED_RANGE.stop)),
                                    house=house, generator=generator))
    return out


# ------------------------------------------------------------------ silent rollouts
#: Words whose counts in the narration up to the cue are scanned as features.
WORDS = ("phone", "call", "called", "looked", "opened", "shut", "closed", "stretched",
         "reached", "stood", "holding", "carrying", "back", "again", "empty", "inside",
         "high", "shelf", "took", "picked", "put", "left", "came", "entered", "walked",
         "went", "waited", "paused", "watched", "saw", "told", "gave", "handed", "child",
         "wheelchair", "nothing")


def window_tokens(obs: Mapping[str, Any]) -> list[str]:
    """The tokens of one observation window: narration words (digits dropped), word
    bigrams, and event tokens (``ev:VERB`` and ``ev:VERB:CLASS`` of the first argument)."""
    from mindhelper_env.agents.tracker import parse_events

    words = _tokens(str(obs.get("narration", "")))
    out = list(words) + [f"{a}_{b}" for a, b in zip(words, words[1:], strict=False)]
    for ev in parse_events(obs):
        verb = str(ev.get("verb"))
        out.append(f"ev:{verb}")
        args = ev.get("args") or []
        if args and isinstance(args[0], dict):
            out.append(f"ev:{verb}:{args[0].get('class')}")
    return out


@dataclass
class EpisodeData:
    """What a silent robot observes in one episode, with the labels used for training.

    ``windows``: tokens of every window (window 0 is the reset observation); ``ticks``: the
    decision tick after each window; ``positive``: intervening at that tick would be precise
    (``onset <= tick <= deadline``); ``cue_window``: the window of the first visible struggle
    (None if nobody struggled); ``features``: :data:`FEATURES` values."""

    family: str
    group: str | None
    needs_help: bool
    windows: list[list[str]]
    ticks: list[int]
    positive: list[bool]
    cue_window: int | None
    features: dict[str, float] = field(default_factory=dict)

    def cue_tokens(self) -> list[str]:
        """Tokens of the reset observation and every window up to and including the cue's."""
        end = len(self.windows) if self.cue_window is None else self.cue_window + 1
        return [t for w in self.windows[:end] for t in w]


def episode_data(spec: Mapping[str, Any]) -> EpisodeData:
    """Roll ``spec`` out with the robot silent and extract :class:`EpisodeData`."""
    import gymnasium as gym

    import mindhelper_env  # noqa: F401 - registers the env

    ref = spec["reference"]
    window = ref.get("window") if ref.get("needs_intervention") else None
    tracker = _CueTracker()
    from mindhelper_env.evaluation import DEFAULT_ENV_ID

    # the episode is given: any current id plays it as it is
    env = gym.make(DEFAULT_ENV_ID)
    windows, ticks, texts = [], [], []
    snap_reset: dict[str, float] = {}
    snap_cue: dict[str, float] | None = None
    cue_window = None
    try:
        obs, info = env.reset(options={"episode": dict(spec)})
        k = 0
        while True:
            tracker.update(obs, info)
            windows.append(window_tokens(obs))
            texts.append(str(obs.get("narration", "")))
            ticks.append(int(info.get("tick", 0)))
            if k == 0:
                snap_reset = _reset_features(tracker)
            if cue_window is None and tracker.first is not None:
                cue_window = k
                snap_cue = _cue_features(tracker, " ".join(texts))
            obs, _, term, trunc, info = env.step("none")
            k += 1
            if term or trunc:
                tracker.update(obs, info)  # the last window (no decision follows it)
                break
    finally:
        env.close()
    if snap_cue is None:
        snap_cue = _cue_features(tracker, " ".join(texts))
    positive = [window is not None and int(window["onset_tick"]) <= t
                <= int(window["deadline_tick"]) for t in ticks]
    feats = {**snap_reset, **snap_cue, **_post_features(tracker, ticks)}
    fam = str(spec["family"])
    return EpisodeData(fam, _group(fam), bool(ref.get("needs_intervention")), windows, ticks,
                       positive, cue_window, feats)


class _CueTracker(BeliefTracker):
    """The tracker's visual facts, remembering the state just before the first struggle and
    the event history (the observer's judgement of a cue, ``need``, is never read)."""

    def reset(self) -> None:
        super().reset()
        self.first: Any = None          # the first cue
        self.before: dict[str, Any] = {}  # bodies and places just before its tick
        self.history: list[dict[str, Any]] = []
        self.room_at: dict[int, list[tuple[int, Any]]] = {}

    def _tick(self, tick: int, events: list[dict[str, Any]]) -> list[Any]:
        before = None
        if self.first is None:
            before = {"where": dict(self.where),
                      "people": {p.id: (p.room, p.near, tuple(p.holding), p.kind)
                                 for p in self.people.values()},
                      "open": dict(self.open)}
        cues = super()._tick(tick, events)
        for ev in events:
            self.history.append(ev)
        for p in self.people.values():
            self.room_at.setdefault(p.id, []).append((tick, p.room))
        if self.first is None and cues:
            self.first = cues[0]
            self.before = before or {}
        return cues


def _is_unusual(t: Any, obj: int, loc: int) -> bool:
    from mindhelper_env.scenarios.observer import is_usual_place

    if loc in t.people or loc == t.robot_id or loc in t.rooms:
        return False
    return not is_usual_place(t.classes.get(obj, ""), t.classes.get(loc, ""))


def _object_classes() -> tuple[str, ...]:
    from mindhelper_env.world.house import OBJECT_CATALOG

    return tuple(sorted(OBJECT_CATALOG))


_PLACE_CLASSES = ("fridge", "kitchencabinet", "kitchencounter", "kitchentable", "coffeetable",
                  "wallshelf", "bookshelf", "closet", "dishwasher", "microwave", "desk",
                  "sofa", "bathroomcabinet", "nightstand")


def _reset_features(t: Any) -> dict[str, float]:
    people = list(t.people.values())
    f: dict[str, float] = {}
    kinds = [p.kind for p in people]
    f["reset:people"] = len(people)
    for k in ("adult", "child", "wheelchair"):
        f[f"reset:people_{k}"] = kinds.count(k)
    f["reset:holding_any"] = sum(bool(p.holding) for p in people)
    f["reset:holding_two"] = sum(len(p.holding) >= 2 for p in people)
    f["reset:held_objects"] = sum(len(p.holding) for p in people)
    loose = {o: loc for o, loc in t.where.items()
             if loc not in t.people and loc != t.robot_id}
    f["reset:objects_seen"] = len(loose)
    f["reset:objects_unusual"] = sum(_is_unusual(t, o, loc) for o, loc in loose.items())
    f["reset:objects_on_wallshelf"] = sum(t.classes.get(loc) == "wallshelf"
                                          for loc in loose.values())
    f["reset:objects_on_floor"] = sum(loc in t.rooms for loc in loose.values())
    f["reset:containers"] = len(t.is_container)
    f["reset:containers_open"] = sum(bool(t.open.get(c)) for c in t.is_container)
    places = [pl for pl in t.room_of if pl not in t.rooms and t.classes.get(pl) != "character"]
    f["reset:places"] = len(places)
    f["reset:rooms"] = len(t.rooms)
    rooms = [p.room for p in people]
    f["reset:people_in_robot_room"] = sum(r == t.robot_room for r in rooms)
    f["reset:max_people_per_room"] = max((rooms.count(r) for r in rooms), default=0)
    f["reset:rooms_with_people"] = len(set(rooms))
    small = any(k != "adult" for k in kinds)
    f["reset:small_and_high_object"] = float(small and f["reset:objects_on_wallshelf"] > 0)
    f["reset:small_same_room_as_wallshelf"] = float(any(
        p.kind != "adult" and any(t.room_of.get(pl) == p.room and t.classes.get(pl) ==
                                  "wallshelf" for pl in places) for p in people))
    f["reset:two_hands_full_and_closed_box_in_room"] = float(any(
        len(p.holding) >= 2 and any(t.room_of.get(b) == p.room and not t.open.get(b)
                                    for b in t.is_container) for p in people))
    for c in _object_classes():
        f[f"reset:objects_{c}"] = sum(t.classes.get(o) == c for o in t.where)
    for c in _PLACE_CLASSES:
        f[f"reset:places_{c}"] = sum(t.classes.get(pl) == c for pl in places)
    return f


def _cue_features(t: Any, text: str) -> dict[str, float]:
    from mindhelper_env.render.text import EVENT_VERBS
    from mindhelper_env.scenarios.observer import classes_kept_at, is_usual_place

    f: dict[str, float] = {}
    cue = t.first
    f["cue:has_cue"] = float(cue is not None)
    for k in ("look", "stretch", "stand"):
        f[f"cue:kind_{k}"] = float(cue is not None and cue.kind == k)
    f["cue:tick"] = float(cue.tick) if cue is not None else -1.0
    who = cue.person if cue is not None else None
    bodies = t.before.get("people", {}) if cue is not None else {}
    where = t.before.get("where", dict(t.where))
    me = bodies.get(who, (None, None, (), "adult"))
    place = cue.place if cue is not None else None
    anchor = place
    if cue is not None and cue.kind == "stretch":
        loc = where.get(place)
        anchor = loc if loc is not None and loc not in t.rooms else place
    pc = t.classes.get(place, "") if place is not None else ""
    f["cue:place_container"] = float(place in t.is_container)
    f["cue:place_wallshelf"] = float(t.classes.get(anchor, "") == "wallshelf")
    for k in ("adult", "child", "wheelchair"):
        f[f"cue:struggler_{k}"] = float(cue is not None and me[3] == k)
    f["cue:struggler_holding"] = float(len(me[2]))
    others = [b for pid, b in bodies.items() if pid != who and b[0] == me[0]]
    f["cue:others_in_room"] = len(others)
    f["cue:adults_in_room"] = sum(b[3] == "adult" for b in others)
    f["cue:free_adults_in_room"] = sum(b[3] == "adult" and len(b[2]) < 2 for b in others)
    at = [b for b in others if b[1] == anchor]
    f["cue:people_at_furniture"] = len(at)
    f["cue:adults_at_furniture"] = sum(b[3] == "adult" for b in at)
    f["cue:free_adults_at_furniture"] = sum(b[3] == "adult" and len(b[2]) < 2 for b in at)
    f["cue:people_elsewhere"] = sum(1 for pid, b in bodies.items()
                                    if pid != who and b[0] != me[0])
    kept = classes_kept_at(pc)
    known = [o for o, loc in where.items() if t.classes.get(o) in kept
             and loc not in t.people and loc != t.robot_id]
    f["cue:kept_classes"] = len(kept)
    f["cue:kept_known"] = len(known)
    f["cue:kept_known_usual"] = sum(is_usual_place(t.classes.get(o, ""),
                                                   t.classes.get(where[o], "")) for o in known)
    f["cue:kept_known_unusual"] = f["cue:kept_known"] - f["cue:kept_known_usual"]
    f["cue:kept_all_unusual"] = float(bool(known) and f["cue:kept_known_usual"] == 0)
    # authorship: did the struggler put something at the place that has since moved?
    hist = [ev for ev in t.history if cue is None or ev["tick"] < cue.tick]
    puts = {}
    movers: dict[int, list[tuple[int, int, Any]]] = {}
    for ev in hist:
        args = [int(a["id"]) for a in ev.get("args", []) if isinstance(a, dict) and "id" in a]
        if ev.get("verb") in ("putin", "putback") and len(args) >= 2:
            if ev.get("actor") == who:
                puts[args[0]] = (args[1], ev["tick"])
            movers.setdefault(args[0], []).append((ev["tick"], int(ev.get("actor", -1)),
                                                   ev.get("room")))
    mine = [o for o, (pl, _) in puts.items() if pl == place]
    moved = [o for o in mine if where.get(o) != place]
    f["cue:struggler_put_here"] = float(bool(mine))
    f["cue:struggler_put_here_moved"] = float(bool(moved))
    by_other = [o for o in moved if any(a != who and tk > puts[o][1]
                                        for tk, a, _ in movers.get(o, []))]
    f["cue:moved_by_other"] = float(bool(by_other))

    def room_then(pid: Any, tick: int) -> Any:
        r = None
        for tk, room in t.room_at.get(pid, []):
            if tk > tick:
                break
            r = room
        return r

    f["cue:moved_while_away"] = float(any(
        a != who and tk > puts[o][1] and room_then(who, tk) != room
        for o in by_other for tk, a, room in movers.get(o, [])))
    f["cue:moved_objects_total"] = float(sum(len(v) for v in movers.values()))
    for v in EVENT_VERBS:
        f[f"cue:events_{v}"] = sum(ev.get("verb") == v for ev in hist)
        f[f"cue:struggler_{v}"] = sum(ev.get("verb") == v and ev.get("actor") == who
                                      for ev in hist)
    f["cue:actors_acting"] = len({ev.get("actor") for ev in hist})
    f["cue:struggler_rooms_visited"] = len({r for _, r in t.room_at.get(who, [])})
    words = _tokens(text)
    for w in WORDS:
        f[f"cue:word_{w}"] = words.count(w)
    f["cue:words"] = len(words)
    return f


def _post_features(t: Any, ticks: Sequence[int]) -> dict[str, float]:
    cues = t.cues
    first = t.first
    who = first.person if first is not None else None
    f: dict[str, float] = {}
    f["post:ticks"] = float(ticks[-1]) if ticks else 0.0
    f["post:windows"] = len(ticks)
    f["post:struggles"] = len(cues)
    f["post:strugglers"] = len({c.person for c in cues})
    f["post:struggler_struggles"] = sum(c.person == who for c in cues)
    f["post:anyone_else_struggled"] = float(any(c.person != who for c in cues))
    for k in ("look", "stretch", "stand"):
        f[f"post:struggles_{k}"] = sum(c.kind == k for c in cues)
    f["post:events"] = len(t.history)
    f["post:events_after_cue"] = sum(first is not None and ev["tick"] > first.tick
                                     for ev in t.history)
    f["post:ticks_after_cue"] = (f["post:ticks"] - first.tick) if first is not None else -1.0
    return f


def _feature_names() -> tuple[str, ...]:
    from mindhelper_env.render.text import EVENT_VERBS

    reset = ["people", "people_adult", "people_child", "people_wheelchair", "holding_any",
             "holding_two", "held_objects", "objects_seen", "objects_unusual",
             "objects_on_wallshelf", "objects_on_floor", "containers", "containers_open",
             "places", "rooms", "people_in_robot_room", "max_people_per_room",
             "rooms_with_people", "small_and_high_object", "small_same_room_as_wallshelf",
             "two_hands_full_and_closed_box_in_room",
             *(f"objects_{c}" for c in _object_classes()),
             *(f"places_{c}" for c in _PLACE_CLASSES)]
    cue = ["has_cue", "kind_look", "kind_stretch", "kind_stand", "tick", "place_container",
           "place_wallshelf", "struggler_adult", "struggler_child", "struggler_wheelchair",
           "struggler_holding", "others_in_room", "adults_in_room", "free_adults_in_room",
           "people_at_furniture", "adults_at_furniture", "free_adults_at_furniture",
           "people_elsewhere", "kept_classes", "kept_known", "kept_known_usual",
           "kept_known_unusual", "kept_all_unusual", "struggler_put_here",
           "struggler_put_here_moved", "moved_by_other", "moved_while_away",
           "moved_objects_total",
           *(f"{p}_{v}" for v in EVENT_VERBS for p in ("events", "struggler")),
           "actors_acting", "struggler_rooms_visited", *(f"word_{w}" for w in WORDS), "words"]
    post = ["ticks", "windows", "struggles", "strugglers", "struggler_struggles",
            "anyone_else_struggled", "struggles_look", "struggles_stretch", "struggles_stand",
            "events", "events_after_cue", "ticks_after_cue"]
    return (*(f"reset:{n}" for n in reset), *(f"cue:{n}" for n in cue),
            *(f"post:{n}" for n in post))


#: The feature kinds the scan bounds apply to: all of them. ``post:`` features of the silent
#: rollout (episode length, struggles, how busy the house is after the cue) are bounded too:
#: people carry on with their day once their task is over, given up or done
#: (:attr:`~mindhelper_env.actors.actor.Actor.after`), so that a help episode's silent rollout
#: looks no quieter than its twin's.
SCAN_BOUNDED_KINDS = ("reset", "cue", "post")

#: Names of the scanned episode features (``reset:`` at the reset observation, ``cue:`` at
#: the first visible struggle, ``post:`` over the whole silent rollout).
FEATURES: tuple[str, ...] = _feature_names()


def _data(specs: Iterable[Mapping[str, Any]]) -> list[EpisodeData]:
    return [episode_data(s) for s in specs]


def suite_data(suite: str, limit: int | None = None) -> list[EpisodeData]:
    """:class:`EpisodeData` of the first ``limit`` episodes of ``suite``."""
    from mindhelper_env.scenarios.suites import SUITES, suite_episode

    n = int(SUITES[suite]["n"]) if limit is None else min(limit, int(SUITES[suite]["n"]))
    return [episode_data(suite_episode(suite, i)) for i in range(n)]


def training_data(n: int, seed: int = 0, house: Any = None,
                  specs: Iterable[Mapping[str, Any]] | None = None,
                  generator: str | None = None) -> list[EpisodeData]:
    """:class:`EpisodeData` of ``n`` training episodes of ``generator``
    (:func:`training_episodes`), or of ``specs`` if given (episodes generated once for
    several instruments)."""
    return _data(training_episodes(n, seed, house=house, generator=generator)
                 if specs is None else specs)
