"""Reference agents: ``silent``, ``random`` and the privileged ``oracle``."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mindhelper_env.agents.base import Usage

__all__ = ["SilentAgent", "RandomAgent", "OracleAgent"]


class SilentAgent:
    """Never intervenes: the lower bound on PIR and the upper bound on PSR."""

    name = "silent"

    def __init__(self) -> None:
        self.usage = Usage()

    def reset(self, *, seed: int | None = None) -> None:
        self.usage = Usage()

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        self.usage.decisions += 1
        return "none"


class RandomAgent:
    """Intervenes with probability ``p`` per window with a random, valid-looking program.

    Programs are 1–3 lines built from the grounding candidates in ``info`` (real ids and
    classes), so they parse and often execute; they just do not help on purpose.
    """

    name = "random"

    def __init__(self, p: float = 0.1, seed: int | None = None) -> None:
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"p must be in [0, 1], got {p!r}")
        self.p = float(p)
        self._rng = np.random.default_rng(seed)
        self.usage = Usage()

    def reset(self, *, seed: int | None = None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.usage = Usage()

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        self.usage.decisions += 1
        if self._rng.random() >= self.p:
            return "none"
        return random_program(self._rng, info)


def random_program(rng: np.random.Generator, info: dict[str, Any], n_max: int = 3) -> str:
    """A random program of up to ``n_max`` lines over the candidates in ``info``."""
    cands = info.get("candidates", {})
    objs = cands.get("objects") or []
    locs = cands.get("locations") or []
    people = cands.get("actors") or []
    lines: list[str] = []
    for _ in range(int(rng.integers(1, n_max + 1))):
        verb = ("walk", "open", "grab", "putback", "give", "tell")[int(rng.integers(6))]
        o = objs[int(rng.integers(len(objs)))] if objs else None
        loc = locs[int(rng.integers(len(locs)))] if locs else None
        pp = people[int(rng.integers(len(people)))] if people else None
        if verb == "walk" and loc:
            lines.append(f"[walk] <{loc['class']}> ({loc['id']})")
        elif verb == "open" and loc:
            lines.append(f"[open] <{loc['class']}> ({loc['id']})")
        elif verb == "grab" and o:
            lines.append(f"[walk] <{o['class']}> ({o['id']})")
            lines.append(f"[grab] <{o['class']}> ({o['id']})")
        elif verb == "putback" and o and loc:
            lines.append(f"[putback] <{o['class']}> ({o['id']}) <{loc['class']}> ({loc['id']})")
        elif verb == "give" and o and pp:
            lines.append(f"[give] <{o['class']}> ({o['id']}) <character> ({pp['id']})")
        elif verb == "tell" and o and pp and loc:
            lines.append(f"[tell] <character> ({pp['id']}) <{o['class']}> ({o['id']}) "
                         f"<{loc['class']}> ({loc['id']})")
    return "\n".join(lines) if lines else "[walk] <character> (1)"


class OracleAgent:
    """Privileged upper bound: reads ``env.unwrapped.ground_truth`` and acts at onset.

    It issues the reference program at the first window that starts at or after the onset
    tick and is silent otherwise. This is the one agent that looks past the Gymnasium API;
    it proves every episode is solvable (PIR = PSR = TA = 100 %).
    """

    name = "oracle"

    def __init__(self, env: Any) -> None:
        if env is None:
            raise ValueError("the oracle needs the env: make_agent('oracle', env=env)")
        self.env = env
        self.usage = Usage()
        self._acted = False

    def reset(self, *, seed: int | None = None) -> None:
        self.usage = Usage()
        self._acted = False

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        t0 = time.perf_counter()
        self.usage.decisions += 1
        ref = self.env.unwrapped.ground_truth
        out = "none"
        if (ref.needs_intervention and not self._acted and ref.window is not None
                and int(info["tick"]) >= ref.window["onset_tick"]):
            self._acted = True
            out = "\n".join(ref.reference_actions)
        self.usage.seconds += time.perf_counter() - t0
        return out
