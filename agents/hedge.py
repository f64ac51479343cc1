"""``MovementPrefix``: the movement-prefix hedge, as a wrapper around any agent.

Were an intervention timed by the first *executed* acting line, an agent could hedge: put a
few free ``[walk]`` lines in front of every program, so that in an episode that ends before
the act comes up the robot is scored silent, while in one that runs on it is scored as
having helped. The benchmark closes that door twice — the intervention is the *issue* of the
first program containing an acting line, and every episode runs to its horizon
(docs/metrics.md) — and this wrapper is how the tests check it: it changes *when* the act
is executed, never *whether* the agent committed to it.

``MovementPrefix(agent, lines=8)`` prefixes every program ``agent`` emits other than
``"none"`` with ``lines`` lines ``[walk] <room> (id)`` to the room the robot stands in (a
real place from ``info``, so each executes as one tick of movement; a location in view when
the robot's room is unknown). Registry names take the suffix ``+prefixN``:
``make_agent("reactive+prefix10")``, ``evaluate(suite, ["reactive+prefix10"], ...)``,
``mindhelper evaluate --agents reactive+prefix10``. The env runs at most 64 lines of a
program; prefixed lines count toward that.
"""

from __future__ import annotations

import re
from typing import Any

from mindhelper_env.world.script import is_silence

__all__ = ["MovementPrefix", "PREFIX_SUFFIX", "split_prefix_suffix"]

#: ``NAME+prefixN``: the registry agent ``NAME`` wrapped in ``MovementPrefix(lines=N)``.
PREFIX_SUFFIX = re.compile(r"^(?P<base>.+)\+prefix(?P<lines>\d{1,3})$")


def split_prefix_suffix(name: str) -> tuple[str, int | None]:
    """``("reactive", 10)`` for ``"reactive+prefix10"``; ``(name, None)`` without a suffix."""
    m = PREFIX_SUFFIX.match(name) if isinstance(name, str) else None
    if m is None:
        return name, None
    return m.group("base"), int(m.group("lines"))


class MovementPrefix:
    """Prefix every non-``"none"`` program of ``agent`` with ``lines`` free ``[walk]`` lines.

    ``reset`` and ``usage`` are the wrapped agent's (``trigger_ops`` and ``trace`` too, when
    it has them); ``name`` is ``"<agent name>+prefix<lines>"``.
    """

    def __init__(self, agent: Any, lines: int = 8) -> None:
        if isinstance(lines, bool) or not isinstance(lines, int) or not 0 <= lines <= 63:
            raise ValueError(f"lines must be an int from 0 to 63, got {lines!r}")
        if not callable(getattr(agent, "act", None)):
            raise TypeError(f"agent must have an act(obs, info) method, got {type(agent).__name__}")
        self.agent = agent
        self.lines = lines
        self.name = f"{getattr(agent, 'name', type(agent).__name__)}+prefix{lines}"

    @property
    def usage(self) -> Any:
        return self.agent.usage

    def __getattr__(self, attr: str) -> Any:
        # trigger_ops, trace, ... of the wrapped agent (only for attributes not set here)
        if attr == "agent":
            raise AttributeError(attr)
        return getattr(self.agent, attr)

    def reset(self, *, seed: int | None = None) -> None:
        self.agent.reset(seed=seed)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        program = self.agent.act(observation, info)
        if not isinstance(program, str) or is_silence(program) or not program.strip() \
                or self.lines == 0:
            return program
        walk = _walk_line(info)
        if walk is None:
            return program
        return "\n".join([walk] * self.lines + [program])


def _walk_line(info: Any) -> str | None:
    """``[walk]`` to the robot's room (else to the first location in view), or None."""
    if not isinstance(info, dict):
        return None
    cands = info.get("candidates") or {}
    robot = info.get("robot") or {}
    room = robot.get("room")
    for r in cands.get("rooms") or []:
        if r.get("id") == room:
            return f"[walk] <{r['class']}> ({r['id']})"
    for loc in cands.get("locations") or []:
        return f"[walk] <{loc['class']}> ({loc['id']})"
    return None
