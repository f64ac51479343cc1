"""Robot helper agents, written against the plain Gymnasium API.

>>> from mindhelper_env.agents import make_agent
>>> agent = make_agent("random", p=0.1)

``direct-vlm`` (model-backed, needs the ``llm`` extra) is imported only when built:
``make_agent("direct-vlm", model="openai:MODEL@http://host:port/v1")``. ``mindclaw`` (the
MindClaw agent, :mod:`mindhelper_env.agents.mindclaw`) runs without a model, or with one
given the same way; ``learned-trigger`` is MindClaw whose Trigger is a learned policy run
with numpy (the shipped ``learned_trigger.npz``, or ``trigger=PATH``).

Any name (registered or an import path) takes a hedge suffix (:mod:`~mindhelper_env.agents.hedge`):
``+prefixN`` (:class:`~mindhelper_env.agents.hedge.MovementPrefix`, ``N`` free ``[walk]``
lines before each of its programs), ``+waitN`` (wait-and-see), ``+repeatN`` (act on a
repeated struggle), ``+delayN`` (act ``N`` windows later), e.g.
``make_agent("reactive+prefix10")``, ``make_agent("physical-rules+wait3")``.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from typing import Any

from mindhelper_env.agents.base import Agent, Usage
from mindhelper_env.agents.belief import (
    BeliefTrackerAgent,
    GoalBlindAgent,
    MovedAbsentAgent,
    PriorAgent,
    ReactiveAgent,
)
from mindhelper_env.agents.hedge import MovementPrefix, make_hedge, split_hedge_suffix
from mindhelper_env.agents.simple import OracleAgent, RandomAgent, SilentAgent

__all__ = ["Agent", "Usage", "make_agent", "AGENTS", "register_agent", "resolve_agent",
           "is_import_path",
           "SilentAgent", "RandomAgent", "OracleAgent", "BeliefTrackerAgent", "ReactiveAgent",
           "MovedAbsentAgent", "PriorAgent", "SHORTCUT_AGENTS", "MovementPrefix"]

#: registry name -> factory(**kwargs)
AGENTS: dict[str, Callable[..., Any]] = {
    "silent": lambda **kw: SilentAgent(),
    "random": lambda p=0.1, seed=None, **kw: RandomAgent(p=p, seed=seed),
    "oracle": lambda env=None, **kw: OracleAgent(env),
    "belief-tracker": lambda **kw: BeliefTrackerAgent(),
    "ablation-goal-blind": lambda **kw: GoalBlindAgent(),
    "reactive": lambda min_struggles=1, **kw: ReactiveAgent(min_struggles=min_struggles),
    "moved-absent": lambda **kw: MovedAbsentAgent(),
    "prior": lambda act_window=4, **kw: PriorAgent(act_window=act_window),
}


def _ablation(name: str) -> Callable[..., Any]:
    def build(**kw: Any) -> Any:
        from mindhelper_env.agents.ablations import ABLATIONS

        return ABLATIONS[name]()

    return build


def _perspective_free(**kw: Any) -> Any:
    from mindhelper_env.agents.perspective_free import PerspectiveFreeAgent

    return PerspectiveFreeAgent()


# validity baselines (docs/validity.md): the tracker without perspectives, and a shortcut
AGENTS["ablation-shared-view"] = _ablation("ablation-shared-view")
AGENTS["ablation-own-actions"] = _ablation("ablation-own-actions")
AGENTS["perspective-free"] = _perspective_free


def _physical_rules(**kw: Any) -> Any:
    from mindhelper_env.agents.physical import PhysicalRulesAgent

    return PhysicalRulesAgent()


def _coarse_mind(**kw: Any) -> Any:
    from mindhelper_env.agents.coarse_mind import CoarseMindAgent

    return CoarseMindAgent()


# validity instruments (docs/validity.md): objects without minds; a mind at room level
AGENTS["physical-rules"] = _physical_rules
AGENTS["coarse-mind"] = _coarse_mind

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


def _learned_trigger(model: Any = None, env: Any = None, seed: int | None = None,
                     trigger: Any = None, **kw: Any) -> Any:
    """MindClaw whose Trigger is a learned policy: the shipped one, or ``trigger=PATH``
    (an ``.npz`` exported by ``mindhelper train-trigger``); needs no torch."""
    from mindhelper_env.agents.mindclaw import MindClawAgent
    from mindhelper_env.agents.mindclaw.learned import NumpyTriggerPolicy
    from mindhelper_env.agents.mindclaw.trigger import policy_observation

    agent = MindClawAgent(model=model, policy=NumpyTriggerPolicy(trigger),
                          features=policy_observation, **kw)
    agent.name = "learned-trigger"
    return agent


AGENTS["learned-trigger"] = _learned_trigger


def register_agent(name: str, factory: Callable[..., Any]) -> None:
    """Add an agent factory under ``name`` (used by ``make_agent`` and the CLI)."""
    AGENTS[name] = factory


_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def is_import_path(name: str) -> bool:
    """``"package.module:Name"``: a user agent given by where it lives."""
    return isinstance(name, str) and bool(_IMPORT_PATH.match(name))


def resolve_agent(name: str) -> Callable[..., Any]:
    """The factory of a registered name or of an import path ``"pkg.mod:Class"``.

    An import path names a class or a factory function; it is called with the keyword
    arguments its signature accepts (``env`` among them, if it wants the env). Raises
    ``ValueError`` for an unknown name or an import path that cannot be imported.
    """
    factory = AGENTS.get(name)
    if factory is not None:
        return factory
    base, hedge, k = split_hedge_suffix(name)
    if hedge is not None and k is not None:
        inner = resolve_agent(base)

        def hedged(**kwargs: Any) -> Any:
            return make_hedge(inner(**kwargs), hedge, k)

        return hedged
    if not is_import_path(name):
        raise ValueError(f"unknown agent {name!r}; known agents: {sorted(AGENTS)} "
                         "(or give an import path like 'mypkg.agents:MyAgent'; any name "
                         "takes a hedge suffix: '+prefixN', '+waitN', '+repeatN', '+delayN')")
    module_name, _, attr = name.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"cannot import agent {name!r}: {type(err).__name__}: {err}") from None
    if not callable(obj):
        raise ValueError(f"agent {name!r} is not a class or a factory")

    def build(**kwargs: Any) -> Any:
        try:
            params = inspect.signature(obj).parameters.values()
        except (TypeError, ValueError):
            return obj(**kwargs)
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            return obj(**kwargs)
        names = {p.name for p in params}
        return obj(**{k: v for k, v in kwargs.items() if k in names})

    return build


def make_agent(name: str, **kwargs: Any) -> Any:
    """Build an agent: ``make_agent("random", p=0.1)``, ``make_agent("oracle", env=env)``,
    or a user agent by import path, ``make_agent("mypkg.agents:MyAgent")``."""
    return resolve_agent(name)(**kwargs)
