"""Robot helper agents, written against the plain Gymnasium API.

>>> from mindhelper_env.agents import make_agent
>>> agent = make_agent("random", p=0.1)

``direct-vlm`` (model-backed, needs the ``llm`` extra) is imported only when built:
``make_agent("direct-vlm", model="openai:MODEL@http://host:port/v1")``. ``mindclaw`` (the
MindClaw agent, :mod:`mindhelper_env.agents.mindclaw`) runs without a model, or with one
given the same way.
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


def _direct_vlm(model: Any = None, env: Any = None, seed: int | None = None,
                **kw: Any) -> Any:
    from mindhelper_env.agents.direct_vlm import DirectVLMAgent  # imports no SDK yet

    return DirectVLMAgent(model=model, **kw)


AGENTS["direct-vlm"] = _direct_vlm


def _mindclaw(model: Any = None, env: Any = None, seed: int | None = None, **kw: Any) -> Any:
    from mindhelper_env.agents.mindclaw import MindClawAgent  # imports no SDK

    return MindClawAgent(model=model, **kw)


AGENTS["mindclaw"] = _mindclaw


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
