"""Robot helper agents, written against the plain Gymnasium API.

>>> from mindhelper_env.agents import make_agent
>>> agent = make_agent("random", p=0.1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mindhelper_env.agents.base import Agent, Usage
from mindhelper_env.agents.belief import (
    BeliefTrackerAgent,
    MovedAbsentAgent,
    PriorAgent,
    ReactiveAgent,
)
from mindhelper_env.agents.simple import OracleAgent, RandomAgent, SilentAgent

__all__ = ["Agent", "Usage", "make_agent", "AGENTS", "register_agent",
           "SilentAgent", "RandomAgent", "OracleAgent", "BeliefTrackerAgent", "ReactiveAgent",
           "MovedAbsentAgent", "PriorAgent", "SHORTCUT_AGENTS"]

#: registry name -> factory(**kwargs)
AGENTS: dict[str, Callable[..., Any]] = {
    "silent": lambda **kw: SilentAgent(),
    "random": lambda p=0.1, seed=None, **kw: RandomAgent(p=p, seed=seed),
    "oracle": lambda env=None, **kw: OracleAgent(env),
    "belief-tracker": lambda **kw: BeliefTrackerAgent(),
    "reactive": lambda min_struggles=1, **kw: ReactiveAgent(min_struggles=min_struggles),
    "moved-absent": lambda **kw: MovedAbsentAgent(),
    "prior": lambda act_window=4, **kw: PriorAgent(act_window=act_window),
}

#: The baselines that must not pass the benchmark (they do not track minds).
SHORTCUT_AGENTS = ("reactive", "moved-absent", "prior")


def register_agent(name: str, factory: Callable[..., Any]) -> None:
    """Add an agent factory under ``name`` (used by ``make_agent`` and the CLI)."""
    AGENTS[name] = factory


def make_agent(name: str, **kwargs: Any) -> Any:
    """Build a registered agent: ``make_agent("random", p=0.1)``, ``make_agent("oracle", env=env)``."""
    try:
        factory = AGENTS[name]
    except KeyError:
        raise ValueError(f"unknown agent {name!r}; known agents: {sorted(AGENTS)}") from None
    return factory(**kwargs)
