"""Wrappers that give the MindHelper envs fixed-size spaces for standard RL libraries.

Stable-Baselines3 and most RL code need ``Box``/``Discrete`` spaces; the env speaks text.
Like Minigrid's ``FlatObsWrapper``, these wrappers translate, using only what an agent may
use (``obs`` and ``info``, never the ground truth):

* :class:`BagOfWordsObs` turns the observation into a ``Box(float32)`` vector of word and
  event counts over a fixed vocabulary (:data:`VOCABULARY`), plus a decaying memory of
  earlier windows and the episode's progress;
* :class:`CandidateActions` turns the action space into ``Discrete(K + 1)``: ``0`` is
  ``"none"`` and ``1..K`` are programs built from ``info["candidates"]`` (give a visible
  object to a person, tell a person where a visible object is, open a closed container),
  with :meth:`CandidateActions.action_masks` for ``sb3_contrib``'s ``MaskablePPO``.

>>> import gymnasium as gym
>>> from mindhelper_env.wrappers import BagOfWordsObs, CandidateActions
>>> env = BagOfWordsObs(CandidateActions(gym.make("MindHelper-VirtualHome-v3")))
>>> env.observation_space.shape, env.action_space.n
((243,), 41)

Apply :class:`CandidateActions` first (it reads the text observation's ``info``), then
:class:`BagOfWordsObs`; :func:`make_rl_env` does both.
"""

from __future__ import annotations

import json
import re
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from mindhelper_env.render.text import EVENT_VERBS
from mindhelper_env.world.house import FURNITURE, OBJECT_CATALOG, ROOM_TYPES

__all__ = ["BagOfWordsObs", "CandidateActions", "make_rl_env", "VOCABULARY", "VERBS",
           "CLASSES"]

#: Verbs counted from the events JSON (the env's event verbs plus background ``move``).
VERBS: tuple[str, ...] = tuple(EVENT_VERBS) + ("move",)
#: Classes of things in the events JSON: objects, furniture, rooms, people.
CLASSES: tuple[str, ...] = tuple(sorted(OBJECT_CATALOG)) + tuple(sorted(FURNITURE)) \
    + tuple(ROOM_TYPES) + ("character",)
#: Words counted in the narration: every class name and the kinds of people.
VOCABULARY: tuple[str, ...] = CLASSES + ("adult", "child", "wheelchair")

_WORD = re.compile(r"[a-z]+")
_STRUGGLES = frozenset({"look", "stretch", "stand"})


class BagOfWordsObs(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Text observation -> ``Box(0, inf, (2 * F + 1,), float32)``: 243 numbers by default.

    For each window the wrapper counts the narration's words over :data:`VOCABULARY`
    (52 words: every class name and the kinds of people), the events' verbs over
    :data:`VERBS` (20) and the classes of the events' arguments (and of what an ``open``
    revealed) over :data:`CLASSES` (49): ``x_t``, ``F = 121`` numbers
    (:attr:`n_features`), scaled by ``log1p``. The observation is
    ``[x_t, m_t, tick / max_ticks]`` with the memory ``m_t = decay * m_{t-1} + x_t``
    (``m_0 = x_0``, the scene described at reset). Unknown words are ignored.

    Args:
        env: a MindHelper env (or a wrapper of one) with the text observation.
        decay: memory factor in ``[0, 1)`` (default 0.8).
    """

    def __init__(self, env: gym.Env, decay: float = 0.8) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, decay=decay)
        gym.ObservationWrapper.__init__(self, env)
        if not isinstance(env.observation_space, spaces.Dict) or not {
                "narration", "events", "tick"} <= set(env.observation_space.spaces):
            raise ValueError("BagOfWordsObs needs the MindHelper text observation (Dict with "
                             "narration, events, tick)")
        if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0 <= decay < 1:
            raise ValueError(f"decay must be a number in [0, 1), got {decay!r}")
        self.decay = float(decay)
        self._words = {w: i for i, w in enumerate(VOCABULARY)}
        self._verbs = {v: len(VOCABULARY) + i for i, v in enumerate(VERBS)}
        off = len(VOCABULARY) + len(VERBS)
        self._classes = {c: off + i for i, c in enumerate(CLASSES)}
        #: ``F``: features per window
        self.n_features = off + len(CLASSES)
        tick_space = env.observation_space["tick"]
        self._max_tick = max(int(getattr(tick_space, "n", 1)) - 1, 1)
        self.observation_space = spaces.Box(0.0, np.inf, (2 * self.n_features + 1,), np.float32)
        self._memory = np.zeros(self.n_features, np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._memory = np.zeros(self.n_features, np.float32)
        return super().reset(seed=seed, options=options)

    def window_features(self, obs: dict[str, Any]) -> np.ndarray:
        """``x_t`` of one text observation (before ``log1p``)."""
        x = np.zeros(self.n_features, np.float32)
        words = self._words
        for w in _WORD.findall(str(obs["narration"]).lower()):
            i = words.get(w)
            if i is not None:
                x[i] += 1.0
        try:
            events = json.loads(obs["events"]) if obs["events"] else []
        except ValueError:
            events = []
        for ev in events if isinstance(events, list) else []:
            if not isinstance(ev, dict):
                continue
            i = self._verbs.get(ev.get("verb"))
            if i is not None:
                x[i] += 1.0
            for arg in list(ev.get("args") or []) + list(ev.get("contents") or []):
                j = self._classes.get(arg.get("class") if isinstance(arg, dict) else None)
                if j is not None:
                    x[j] += 1.0
        return x

    def observation(self, observation: dict[str, Any]) -> np.ndarray:
        x = np.log1p(self.window_features(observation))
        self._memory = self.decay * self._memory + x
        tick = min(float(observation["tick"]) / self._max_tick, 1.0)
        return np.concatenate([x, self._memory, np.array([tick], np.float32)]).astype(
            np.float32, copy=False)


class CandidateActions(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """``Discrete(K + 1)`` actions over ``"none"`` and K programs from ``info["candidates"]``.

    ``K = 2 * max_people * max_objects + max_containers`` slots (41 actions by default):

    * ``1 .. P*O``: give object ``o`` to person ``p`` (walk to it, grab it, walk to the
      person, give); objects held by someone other than the robot are not offered;
    * next ``P*O``: tell person ``p`` where object ``o`` is (walk to the person, tell);
    * last ``C``: open closed container ``c`` (walk to it, open).

    Slot order carries the evidence, not the ids: people are ranked by their latest visible
    struggle (``look``, ``stretch``, ``stand`` events), then by their latest event; objects
    and containers by the latest event naming them (also what an ``open`` revealed, and
    what lies at the place a struggle names); ties by id. Everything comes from ``obs``/``info`` as the env hands them out.
    :meth:`action_masks` marks the slots that hold a program now; a masked action (e.g. from
    ``check_env``) is sent as ``"none"`` and ``info["invalid_action"]`` is ``True``.
    ``info["program"]`` is the program sent.
    """

    def __init__(self, env: gym.Env, max_people: int = 3, max_objects: int = 6,
                 max_containers: int = 4) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, max_people=max_people,
                                                 max_objects=max_objects,
                                                 max_containers=max_containers)
        gym.Wrapper.__init__(self, env)
        for name, val in (("max_people", max_people), ("max_objects", max_objects),
                          ("max_containers", max_containers)):
            if isinstance(val, bool) or not isinstance(val, int) or not 1 <= val <= 32:
                raise ValueError(f"{name} must be an int in 1..32, got {val!r}")
        self.max_people, self.max_objects, self.max_containers = max_people, max_objects, \
            max_containers
        self.n_programs = 2 * max_people * max_objects + max_containers
        self.action_space = spaces.Discrete(self.n_programs + 1)
        self._programs: list[str | None] = [None] * self.n_programs
        self._seen: dict[int, int] = {}
        self._struggle: dict[int, int] = {}
        self._order = 0

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._seen.clear()
        self._struggle.clear()
        self._order = 0
        self._update(info)
        return obs, info

    def step(self, action: Any):
        a = int(action)
        if not 0 <= a <= self.n_programs:
            raise ValueError(f"action must be in 0..{self.n_programs}, got {action!r}")
        program = "none" if a == 0 else self._programs[a - 1]
        invalid = program is None
        obs, reward, terminated, truncated, info = self.env.step(program or "none")
        info["program"] = program or "none"
        info["invalid_action"] = invalid
        if not (terminated or truncated):
            self._update(info)
        return obs, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """``bool`` array of length ``K + 1``: which actions hold a program (0 always)."""
        return np.array([True] + [p is not None for p in self._programs], dtype=bool)

    def program(self, action: int) -> str | None:
        """The program action ``action`` sends now (``None`` for a masked slot)."""
        return "none" if int(action) == 0 else self._programs[int(action) - 1]

    # ------------------------------------------------------------------ slots
    def _update(self, info: dict[str, Any]) -> None:
        # where each visible object lies now: a struggle toward a place names the place, and
        # what lies there is what the struggle may be about
        at: dict[int, list[int]] = {}
        for o in (info.get("candidates") or {}).get("objects", []):
            if isinstance(o.get("id"), int) and isinstance(o.get("location"), int):
                at.setdefault(o["location"], []).append(o["id"])
        for ev in info.get("events") or []:
            self._order += 1
            actor = ev.get("actor")
            if isinstance(actor, int):
                self._seen[actor] = self._order
                if ev.get("verb") in _STRUGGLES:
                    self._struggle[actor] = self._order
            for arg in list(ev.get("args") or []) + list(ev.get("contents") or []):
                if isinstance(arg, dict) and isinstance(arg.get("id"), int):
                    self._seen[arg["id"]] = self._order
                    if ev.get("verb") in _STRUGGLES:
                        for o in at.get(arg["id"], ()):
                            self._seen[o] = self._order
        self._programs = self._slots(info.get("candidates") or {}, info.get("robot") or {})

    def _rank(self, ids: list[int], *, people: bool = False) -> list[int]:
        def key(i: int) -> tuple[int, int, int]:
            return (-self._struggle.get(i, 0) if people else 0, -self._seen.get(i, 0), i)
        return sorted(ids, key=key)

    def _slots(self, cand: dict[str, Any], robot: dict[str, Any]) -> list[str | None]:
        robot_id = robot.get("id", 1)
        people = {a["id"]: a for a in cand.get("actors", [])}
        places = {loc["id"]: loc for loc in cand.get("locations", [])}
        places.update({r["id"]: r for r in cand.get("rooms", [])})
        objects = {o["id"]: o for o in cand.get("objects", [])
                   if o.get("location") not in people}
        p_ids = self._rank(list(people), people=True)[:self.max_people]
        o_ids = self._rank(list(objects))[:self.max_objects]
        c_ids = self._rank([i for i, loc in places.items() if loc.get("open") is False]
                           )[:self.max_containers]
        n_p, n_o = self.max_people, self.max_objects
        out: list[str | None] = [None] * self.n_programs
        for pi, p in enumerate(p_ids):
            for oi, o in enumerate(o_ids):
                cls = objects[o]["class"]
                fetch = [] if objects[o].get("location") == robot_id else [
                    f"[walk] <{cls}> ({o})", f"[grab] <{cls}> ({o})"]
                out[pi * n_o + oi] = "\n".join(fetch + [
                    f"[walk] <character> ({p})", f"[give] <{cls}> ({o}) <character> ({p})"])
                loc = places.get(objects[o].get("location"))
                if loc is not None:
                    out[n_p * n_o + pi * n_o + oi] = "\n".join([
                        f"[walk] <character> ({p})",
                        f"[tell] <character> ({p}) <{cls}> ({o}) <{loc['class']}> ({loc['id']})"])
        for ci, c in enumerate(c_ids):
            cls = places[c]["class"]
            out[2 * n_p * n_o + ci] = f"[walk] <{cls}> ({c})\n[open] <{cls}> ({c})"
        return out


def make_rl_env(env_id: str = "MindHelper-VirtualHome-v3", *, decay: float = 0.8,
                max_people: int = 3, max_objects: int = 6, max_containers: int = 4,
                **env_kwargs: Any) -> gym.Env:
    """``BagOfWordsObs(CandidateActions(gym.make(env_id, **env_kwargs)))``."""
    import mindhelper_env  # noqa: F401  (registers the envs)

    env = gym.make(env_id, **env_kwargs)
    env = CandidateActions(env, max_people=max_people, max_objects=max_objects,
                           max_containers=max_containers)
    return BagOfWordsObs(env, decay=decay)
