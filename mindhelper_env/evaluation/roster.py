"""The agents of a run: each built once with its options before any file is touched, its row
name and result file, and its provenance block.

An agent's row (and its file, ``<name>.jsonl``) is named by
:func:`~mindhelper_env.agents.agent_label`: the registry name of a registered agent, the
``name`` attribute of a user agent given as ``module:Class``. Building every agent up front
turns a bad option (``random:p=2``), an unknown option (``silent:foo=1``), a function where a
class was expected, or a module that does not import (``SyntaxError`` with file and line)
into one ``ValueError`` before ``--out`` exists; two agents that would write the same row
are refused there too. Agents whose model is a local ``hf:`` checkpoint are not built here
(loading weights twice would cost minutes): their options and model spec are still checked.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RosterEntry", "build_roster", "build_agent"]


@dataclass(frozen=True)
class RosterEntry:
    """One agent of a run."""

    spec: str
    label: str
    file: str
    provenance: dict[str, Any] = field(default_factory=dict)


def _not_an_agent(spec: str, obj: Any) -> str | None:
    if callable(getattr(obj, "act", None)) and callable(getattr(obj, "reset", None)):
        return None
    what = "a function" if inspect.isroutine(obj) else f"a {type(obj).__name__}"
    return (f"agent {spec!r}: building it gave {what}, not an agent (an agent has "
            "act(obs, info) and reset(seed=None); give its class, or a factory returning one)")


def build_agent(spec: str, options: Mapping[str, Any], env: Any, seed: int) -> Any:
    """Build ``spec`` with ``options`` (plus the runner's ``env`` and ``seed``); every
    failure is one ``ValueError`` line naming the agent."""
    from mindhelper_env.agents import make_agent

    try:
        agent = make_agent(spec, **{"env": env, "seed": seed, **dict(options)})
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(msg if repr(spec) in msg else f"agent {spec!r}: {msg}") from None
    except TypeError as exc:
        hint = (" (an import path names a class with act(obs, info) and reset(seed=None), "
                "or a factory returning one)" if ":" in spec else "")
        raise ValueError(f"agent {spec!r} cannot be built with options "
                         f"{dict(options) or '{}'}: {exc}{hint}") from None
    except Exception as exc:  # the agent's own constructor failed
        raise ValueError(f"agent {spec!r} cannot be built: {type(exc).__name__}: "
                         f"{exc}") from None
    problem = _not_an_agent(spec, agent)
    if problem:
        raise ValueError(problem)
    return agent


def _class_name_attr(spec: str) -> str | None:
    """The ``name`` class attribute of an import-path agent that is not built here."""
    from mindhelper_env.agents import is_import_path

    if not is_import_path(spec):
        return None
    import importlib

    module, _, attr = spec.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    name = getattr(obj, "name", None)
    return name if isinstance(name, str) and name.strip() else obj.__name__


def _check_eyes(spec: str, agent: Any, env_kwargs: Mapping[str, Any]) -> None:
    """An agent that reads the frames with the reference pixel parser (``observe="pixels"``)
    is refused off the vision track, rather than failing on every window. (Frames smaller
    than the episode's drawing fail on the first window with the size to use, counted and
    flagged like any agent error: the size needed depends on the house.)"""
    if getattr(agent, "observe", None) == "pixels" and env_kwargs.get("obs_mode") != "rgb":
        raise ValueError(f"agent {spec!r} reads frames (observe='pixels'): play it on the "
                         "vision track (--obs rgb --frame-size 768)")


def build_roster(agents: list[str], agent_kwargs: Mapping[str, Mapping[str, Any]],
                 env_id: str, env_kwargs: Mapping[str, Any],
                 seed: int) -> dict[str, RosterEntry]:
    """``{spec: RosterEntry}`` of every agent, in order; ``ValueError`` (one line) for an
    agent that cannot be built or two agents with one row name."""
    import mindhelper_env  # noqa: F401  (registers the envs)
    from mindhelper_env.agents import agent_label
    from mindhelper_env.evaluation.episode import make_env
    from mindhelper_env.evaluation.provenance import agent_provenance
    from mindhelper_env.evaluation.results import result_file_name

    out: dict[str, RosterEntry] = {}
    by_label: dict[str, str] = {}
    env = None
    try:
        for spec in agents:
            options = dict(agent_kwargs.get(spec) or {})
            model = options.get("model")
            if isinstance(model, str) and model.startswith("hf:"):
                # a checkpoint loads in each worker that plays it: only checked here
                from mindhelper_env.models.hf_client import check_hf_source

                check_hf_source(model[3:], bool(options.get("download", False)))
                agent = None
                label = spec if ":" not in spec else (_class_name_attr(spec) or spec)
            else:
                if env is None:
                    env = make_env(env_id, **dict(env_kwargs))
                agent = build_agent(spec, options, env, seed)
                _check_eyes(spec, agent, env_kwargs)
                label = agent_label(spec, agent)
            if "\n" in label or not label.strip():
                raise ValueError(f"agent {spec!r}: its name {label!r} cannot name a row")
            if label in by_label:
                raise ValueError(f"agents {by_label[label]!r} and {spec!r} both name their row "
                                 f"and file {label!r}: give one of them another name")
            by_label[label] = spec
            out[spec] = RosterEntry(spec, label, result_file_name(label),
                                    agent_provenance(label, spec, options, agent))
    finally:
        if env is not None:
            env.close()
    return out
