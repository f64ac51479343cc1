"""Robot helper agents, written against the plain Gymnasium API.

>>> from mindhelper_env.agents import make_agent
>>> agent = make_agent("random", p=0.1)

``direct-vlm`` (model-backed, needs the ``api`` extra for
``openai:`` models, ``local`` for ``hf:``) is imported only when built:
``make_agent("direct-vlm", model="openai:MODEL@http://host:port/v1")``. ``mindclaw`` (the
MindClaw agent, :mod:`mindhelper_env.agents.mindclaw`) runs without a model, or with one
given the same way; ``learned-trigger`` is MindClaw whose Trigger is a learned policy run
with numpy (the shipped ``learned_trigger.npz``, or ``trigger=PATH``).

Any name (registered or an import path) takes a hedge suffix (:mod:`~mindhelper_env.agents.hedge`):
``+prefixN`` (:class:`~mindhelper_env.agents.hedge.MovementPrefix`, ``N`` free ``[walk]``
lines before each of its programs), ``+waitN`` (wait-and-see), ``+repeatN`` (act on a
repeated struggle), ``+delayN`` (act ``N`` windows later), e.g.
``make_agent("reactive+prefix10")``, ``make_agent("physical-rules+wait3")``.

Any agent that reads the text observation also plays the vision track (``obs_mode="rgb"``)
with ``observe="pixels"``: ``make_agent("belief-tracker", observe="pixels")`` wraps it in
:class:`~mindhelper_env.agents.perceive.PixelFed`, which feeds it the events and state the
pixel-perception reference reads from the frames.
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
from mindhelper_env.agents.hedge import MovementPrefix, make_hedge, split_hedge_suffix, strip_hedges
from mindhelper_env.agents.simple import OracleAgent, RandomAgent, SilentAgent

__all__ = ["Agent", "Usage", "make_agent", "AGENTS", "AGENT_GROUPS", "agent_groups",
           "register_agent", "resolve_agent", "is_import_path", "agent_label", "call_factory",
           "SilentAgent", "RandomAgent", "OracleAgent", "BeliefTrackerAgent", "ReactiveAgent",
           "MovedAbsentAgent", "PriorAgent", "SHORTCUT_AGENTS", "MovementPrefix"]

#: registry name -> factory(**kwargs)
#: registry name -> factory(**options). The runner always offers ``env`` and ``seed``; a
#: factory that does not take them simply does not get them (:func:`make_agent`), and any
#: other option a factory does not take is refused with the options it does take.
AGENTS: dict[str, Callable[..., Any]] = {
    "silent": lambda: SilentAgent(),
    "random": lambda p=0.1, seed=None: RandomAgent(p=p, seed=seed),
    "oracle": lambda env=None: OracleAgent(env),
    "belief-tracker": lambda: BeliefTrackerAgent(),
    "ablation-goal-blind": lambda: GoalBlindAgent(),
    "reactive": lambda min_struggles=1: ReactiveAgent(min_struggles=min_struggles),
    "moved-absent": lambda: MovedAbsentAgent(),
    "prior": lambda act_window=4: PriorAgent(act_window=act_window),
}

#: How ``mindhelper list`` groups the registered agents (docs/validity.md, docs/models.md).
AGENT_GROUPS: dict[str, tuple[str, ...]] = {
    "reference": ("belief-tracker", "mindclaw"),
    "shortcut baselines": ("silent", "random", "reactive", "moved-absent", "prior",
                           "physical-rules"),
    "ablations": ("ablation-goal-blind", "ablation-shared-view", "ablation-own-actions",
                  "perspective-free", "coarse-mind", "coarse-mind-a", "coarse-mind-b",
                  "coarse-mind-c", "coarse-mind-d", "coarse-mind-unbound"),
    "model-backed": ("direct-vlm",),
    "learned": ("learned-trigger",),
    "privileged (oracle)": ("oracle",),
    "vision track (obs rgb)": ("mindclaw-vlm", "mindclaw-pixels"),
}
#: Options every runner offers each agent (dropped for factories that do not take them).
RUNNER_OPTIONS = frozenset({"env", "seed"})


def agent_groups() -> dict[str, list[str]]:
    """:data:`AGENT_GROUPS` plus ``registered`` (agents added with :func:`register_agent`)."""
    out = {g: [n for n in names if n in AGENTS] for g, names in AGENT_GROUPS.items()}
    grouped = {n for names in AGENT_GROUPS.values() for n in names}
    extra = sorted(n for n in AGENTS if n not in grouped)
    if extra:
        out["registered"] = extra
    return out


def _ablation(name: str) -> Callable[..., Any]:
    def build() -> Any:
        from mindhelper_env.agents.ablations import ABLATIONS

        return ABLATIONS[name]()

    return build


def _perspective_free() -> Any:
    from mindhelper_env.agents.perspective_free import PerspectiveFreeAgent

    return PerspectiveFreeAgent()


# validity baselines (docs/validity.md): the tracker without perspectives, and a shortcut
AGENTS["ablation-shared-view"] = _ablation("ablation-shared-view")
AGENTS["ablation-own-actions"] = _ablation("ablation-own-actions")
AGENTS["perspective-free"] = _perspective_free


def _physical_rules() -> Any:
    from mindhelper_env.agents.physical import PhysicalRulesAgent

    return PhysicalRulesAgent()


def _coarse_mind(rung: str | None = None) -> Any:
    from mindhelper_env.agents.coarse_mind import CoarseMindAgent

    return CoarseMindAgent(rung=rung)


def _coarse_rung(rung: str) -> Callable[..., Any]:
    def build() -> Any:
        return _coarse_mind(rung)

    return build


# validity instruments (docs/validity.md): objects without minds; a mind at room level
AGENTS["physical-rules"] = _physical_rules
AGENTS["coarse-mind"] = _coarse_mind
# the coarse-mind ladder (agents/coarse_mind.py): co-presence, + phone, + chore, + doors
for _rung in "abcd":
    AGENTS[f"coarse-mind-{_rung}"] = _coarse_rung(_rung)


def _coarse_mind_unbound(rung: str = "d") -> Any:
    from mindhelper_env.agents.coarse_mind_unbound import UnboundCoarseMindAgent

    return UnboundCoarseMindAgent(rung=rung)


# the ladder's rules applied house-wide, bound to nobody (agents/coarse_mind_unbound.py)
AGENTS["coarse-mind-unbound"] = _coarse_mind_unbound

#: The baselines that must not pass the benchmark (they do not track minds).
SHORTCUT_AGENTS = ("reactive", "moved-absent", "prior")


def _direct_vlm(model: Any = None, env: Any = None, seed: int | None = None,
                **kw: Any) -> Any:
    from mindhelper_env.agents.direct_vlm import DirectVLMAgent  # imports no SDK yet

    return DirectVLMAgent(model=model, **kw)


AGENTS["direct-vlm"] = _direct_vlm


def _mindclaw(model: Any = None, env: Any = None, seed: int | None = None,
              observe: str = "text", **kw: Any) -> Any:
    from mindhelper_env.agents.mindclaw import MindClawAgent  # imports no SDK

    # MindClaw reads ``observe`` itself ("text", "vlm": a model's eyes, "pixels"): its
    # Observation module turns the frames into the belief table's input
    return MindClawAgent(model=model, observe=observe, **kw)


AGENTS["mindclaw"] = _mindclaw


def _mindclaw_vlm(model: Any = None, env: Any = None, seed: int | None = None,
                  **kw: Any) -> Any:
    """MindClaw on the vision track with the model's own eyes (``observe="vlm"``)."""
    from mindhelper_env.agents.mindclaw import MindClawAgent

    agent = MindClawAgent(model=model, observe="vlm", **kw)
    agent.name = "mindclaw-vlm"
    return agent


def _mindclaw_pixels(model: Any = None, env: Any = None, seed: int | None = None,
                     **kw: Any) -> Any:
    """MindClaw on the vision track with perfect perception (``observe="pixels"``: the
    reference pixel parser)."""
    from mindhelper_env.agents.mindclaw import MindClawAgent

    agent = MindClawAgent(model=model, observe="pixels", **kw)
    agent.name = "mindclaw-pixels"
    return agent


AGENTS["mindclaw-vlm"] = _mindclaw_vlm
AGENTS["mindclaw-pixels"] = _mindclaw_pixels


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


def call_factory(factory: Callable[..., Any], options: dict[str, Any], name: str) -> Any:
    """``factory(**options)``: the runner's ``env``/``seed`` only where the factory takes
    them; ``ValueError`` naming the option for one it does not take."""
    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return factory(**options)
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        names = {p.name for p in params
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        options = {k: v for k, v in options.items() if k in names or k not in RUNNER_OPTIONS}
        unknown = sorted(k for k in options if k not in names)
        if unknown:
            known = sorted(names - RUNNER_OPTIONS)
            raise ValueError(f"agent {name!r} has no option {unknown[0]!r} (its options: "
                             f"{', '.join(known) if known else 'none'})")
    return factory(**options)


def register_agent(name: str, factory: Callable[..., Any]) -> None:
    """Add an agent factory under ``name`` (used by ``make_agent`` and the CLI)."""
    AGENTS[name] = factory


_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def is_import_path(name: str) -> bool:
    """``"package.module:Name"``: a user agent given by where it lives."""
    return isinstance(name, str) and bool(_IMPORT_PATH.match(name))


def resolve_agent(name: str) -> Callable[..., Any]:
    """The factory of a registered name or of an import path ``"pkg.mod:Class"``.

    An import path names a class or a factory function. The returned factory passes the
    runner's ``env`` and ``seed`` only where the class or function takes them, and raises
    ``ValueError`` naming any other option it does not take (:func:`call_factory`). Raises
    ``ValueError`` for an unknown name (with a "did you mean") or an import path that cannot
    be imported (a ``SyntaxError`` with its file and line).
    """
    factory = AGENTS.get(name)
    if factory is not None:
        registered = factory

        def build_registered(**kwargs: Any) -> Any:
            if "observe" in kwargs and not _takes_observe(registered):
                observe = kwargs.pop("observe")
                return _wrap_observe(call_factory(registered, kwargs, name), observe)
            return call_factory(registered, kwargs, name)

        return build_registered
    base, hedge, k = split_hedge_suffix(name)
    if hedge is not None and k is not None:
        inner = resolve_agent(base)

        def hedged(**kwargs: Any) -> Any:
            if "observe" in kwargs and not _takes_observe(AGENTS.get(strip_hedges(base)[0])):
                # perception is outermost: the hedge reads the perceived text as well
                observe = kwargs.pop("observe")
                return _wrap_observe(make_hedge(inner(**kwargs), hedge, k), observe)
            return make_hedge(inner(**kwargs), hedge, k)

        return hedged
    file_hint = _module_not_file(name)
    if file_hint:
        raise ValueError(f"cannot import agent {name!r}: {file_hint}")
    if not is_import_path(name):
        import difflib

        close = difflib.get_close_matches(name, list(AGENTS), n=1) if isinstance(name, str) \
            else []
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"unknown agent {name!r}; {hint}known agents: "
                         f"{', '.join(sorted(AGENTS))} (or give an import path like "
                         "'mypkg.agents:MyAgent'; any name takes a hedge suffix: '+prefixN', "
                         "'+waitN', '+repeatN', '+delayN')")
    module_name, _, attr = name.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except SyntaxError as err:
        raise ValueError(f"cannot import agent {name!r}: SyntaxError at {err.filename}:"
                         f"{err.lineno}: {err.msg}") from None
    except (ImportError, AttributeError) as err:
        raise ValueError(f"cannot import agent {name!r}: {type(err).__name__}: {err}") from None
    except Exception as err:  # the module raised while it was imported
        where = _user_frame(err)
        raise ValueError(f"cannot import agent {name!r}: importing {module_name} raised "
                         f"{type(err).__name__}{where}: {err}") from None
    if not callable(obj):
        raise ValueError(f"agent {name!r} is not a class or a factory")

    def build(**kwargs: Any) -> Any:
        if "observe" in kwargs and not _takes_observe(obj):
            observe = kwargs.pop("observe")
            return _wrap_observe(call_factory(obj, kwargs, name), observe)
        return call_factory(obj, kwargs, name)

    return build


def _takes_observe(factory: Any) -> bool:
    """Does a factory read the ``observe`` option itself (a named parameter; MindClaw)?
    Every other agent gets ``observe="pixels"`` from :mod:`~mindhelper_env.agents.perceive`."""
    try:
        return "observe" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def _wrap_observe(agent: Any, observe: Any) -> Any:
    from mindhelper_env.agents.perceive import wrap_observe

    return wrap_observe(agent, observe)


def _module_not_file(name: str) -> str:
    """A hint for an agent given by its file (``myagent.py:MyAgent``,
    ``agents/mine.py:MyAgent``) rather than its module; ``""`` for anything else."""
    if not isinstance(name, str) or ":" not in name:
        return ""
    path, _, attr = name.rpartition(":")
    if not path.endswith(".py"):
        return ""
    module = path[:-3].replace("\\", "/").lstrip("./").replace("/", ".")
    suggestion = (f"{module}:{attr}" if ".." not in path
                  and re.fullmatch(r"[A-Za-z_][\w.]*", module) else "")
    return ("give the module, not the file: drop the .py"
            + (f" (e.g. {suggestion}; modules are imported from the current folder)"
               if suggestion else ""))


def _user_frame(err: BaseException) -> str:
    """`` at FILE:LINE`` of the innermost frame of a traceback, or ``""``."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else ""


def agent_label(spec: str, agent: Any) -> str:
    """The name of an agent's row and file (``<label>.jsonl``): the registry name for a
    registered agent (with its ``+prefixN``), else the built agent's ``name`` attribute
    (else its class name, with a warning once per agent)."""
    base, _hedges = strip_hedges(spec)
    if spec in AGENTS or base in AGENTS:
        return spec
    name = getattr(agent, "name", None)
    if isinstance(name, str) and name.strip():
        return name.strip()
    label = type(agent).__name__
    if spec not in _UNNAMED_WARNED:  # once per agent and process
        _UNNAMED_WARNED.add(spec)
        import logging

        what = "no `name` attribute" if name is None else f"no usable `name` ({name!r})"
        logging.getLogger("mindhelper_env.agents").warning(
            "agent %s has %s: its row and result file are named after its class, %r (give "
            "the class a `name = \"...\"` to choose)", spec, what, label)
    return label


_UNNAMED_WARNED: set[str] = set()


def make_agent(name: str, **kwargs: Any) -> Any:
    """Build an agent: ``make_agent("random", p=0.1)``, ``make_agent("oracle", env=env)``,
    or a user agent by import path, ``make_agent("mypkg.agents:MyAgent")``.

    ``env`` and ``seed`` go only to factories that take them; another option the factory
    does not take raises ``ValueError`` naming it and the options it takes."""
    return resolve_agent(name)(**kwargs)
