"""The ``mindclaw`` agent: Engine + Memory + Trigger + reasoning layer + skills.

>>> from mindhelper_env.agents import make_agent
>>> agent = make_agent("mindclaw")                      # symbolic: no model at all
>>> agent = make_agent("mindclaw", model="openai:m@http://127.0.0.1:8000/v1")  # doctest: +SKIP

Without ``model=``, ``$MINDHELPER_MODEL`` is used when set, else everything is symbolic
(``model="symbolic"`` forces that). With a model, ``backends`` chooses per module; the
default ``{"observation": "symbolic", "reasoning": "model", "action": "symbolic"}`` asks the
model for the mental-state judgement (the theory-of-mind step) and lets the planner write
the program for the need it names; ``backends={"action": "model"}`` has the model write the
program too (one more call per intervention). The model is called only when the Trigger
runs ``reasoning_run`` (or ``action_run`` with a model action backend), i.e. on struggle
cues that no skill settles.

The model's decisions are its own: an unusable answer or a failed call gives the module's
"nothing" (not blocked / no program / no cue), counted in ``usage.parse_failures`` or
``usage.fallbacks``; ``fallback="symbolic"`` (an explicit option, off by default) uses the
symbolic result instead. ``usage.sources`` counts decisions by source (model, skill,
symbolic, fallback, failed). ``formats`` picks the answer formats: ``"json"`` (default),
``"compact"`` (letter for reasoning, one line for action and observation; for small
models) or a dict ``{module: format}`` (see :data:`.reasoning.FORMATS`).

``trigger=`` replaces the Trigger by a language-model one asked once per window
(:mod:`.model_trigger`): a model spec such as ``"hf:CKPT"`` (a checkpoint of
``mindhelper train-trigger --algo sft``), a model client, or a ``WindowPlanTrigger``.

Vision track (``obs_mode="rgb"``, frames only): ``observe="vlm"`` has the model turn each
window's frames into events and a snapshot (the paper's Observation module from pixels; one
call a window, ``frames="all"|"sheet"``), ``observe="pixels"`` uses the reference pixel
parser (perfect perception); the belief table, Trigger, skills and reasoning then run as on
text (:mod:`.vision`). ``mindclaw-vlm`` and ``mindclaw-pixels`` are these two, registered
so that one run reports both rows. ``legend=True`` (with ``observe="vlm"``) sends the
picture legend as the first image of every observation call. ``observe="text"`` (default) reads the text track.

Attributes after each episode: ``usage`` (:class:`~mindhelper_env.agents.base.Usage`),
``trace`` (one entry per window, see :mod:`.engine`) and ``trigger_ops``
(``[{"predicted", "window", "tick"}]`` per window up to the intervention; the agent never
knows labels — :func:`mindhelper_env.scenarios.trigger_labels.attach_trigger_labels` adds
them to a result record).
"""

from __future__ import annotations

import os
import time
from typing import Any

from mindhelper_env.agents.base import Usage
from mindhelper_env.agents.frames import is_rgb_observation
from mindhelper_env.agents.mindclaw.engine import Engine
from mindhelper_env.agents.mindclaw.memory import MindMemory
from mindhelper_env.agents.mindclaw.reasoning import (
    COMPACT_FORMATS,
    FORMATS,
    ActionGeneration,
    MentalReasoning,
    Observation,
)
from mindhelper_env.agents.mindclaw.skills import SkillBook, default_skills, default_skills_path
from mindhelper_env.agents.mindclaw.trigger import Policy, Trigger

__all__ = ["MindClawAgent"]

_MODULES = ("observation", "reasoning", "action")
_DEFAULT_BACKENDS = {"observation": "symbolic", "reasoning": "model", "action": "symbolic"}


class MindClawAgent:
    """MindClaw (see the module docstring)."""

    name = "mindclaw"

    def __init__(self, model: Any = None, *, skills: SkillBook | str | os.PathLike[str] | None = None,
                 policy: Policy | None = None, features: Any = None, backends: dict[str, str] | None = None,
                 max_tokens: int = 96, fallback: str = "none",
                 formats: str | dict[str, str] | None = None, trigger: Any = None,
                 observe: str = "text", frames: str = "all", legend: bool = False,
                 legend_scale: int = 3, **client_opts: Any) -> None:
        if model is None:
            model = os.environ.get("MINDHELPER_MODEL") or None
        if model == "symbolic":
            model = None
        client = None
        if isinstance(model, str):
            from mindhelper_env.models import make_client

            client = make_client(model, **client_opts)
        elif client_opts:
            raise ValueError("client options need a model spec string")
        elif model is not None:
            client = model
        chosen = dict(_DEFAULT_BACKENDS)
        for key, value in (backends or {}).items():
            if key not in _MODULES or value not in ("symbolic", "model"):
                raise ValueError(f"backends: expected {{module: 'symbolic'|'model'}} for "
                                 f"modules {_MODULES}, got {key!r}: {value!r}")
            chosen[key] = value
        if client is None:
            chosen = {m: "symbolic" for m in _MODULES}
        self.backends = chosen
        #: The files this agent reads, role -> path (their sha256 go into run provenance).
        self.data_files: dict[str, str] = {}
        if isinstance(skills, (str, os.PathLike)):
            self.data_files["skills"] = os.fspath(skills)
            skills = SkillBook.load(skills)
        elif skills is None:
            self.data_files["skills"] = str(default_skills_path())
        self.skills = skills if skills is not None else default_skills()
        policy_path = getattr(policy, "path", None)
        if isinstance(policy_path, (str, os.PathLike)):
            self.data_files["trigger"] = os.fspath(policy_path)
        if isinstance(model, str):
            self.model_spec = model
        self.client = client
        self.usage = Usage()

        if formats in (None, "json"):
            fmts = {m: FORMATS[m][0] for m in _MODULES}
        elif formats == "compact":
            fmts = dict(COMPACT_FORMATS)
        elif isinstance(formats, dict):
            unknown = set(formats) - set(_MODULES)
            if unknown:
                raise ValueError(f"formats: unknown module(s) {sorted(unknown)}")
            fmts = {m: formats.get(m, FORMATS[m][0]) for m in _MODULES}
        else:
            raise ValueError(f"formats must be 'json', 'compact' or {{module: format}}, got "
                             f"{formats!r}")
        self.formats = fmts
        self.fallback = fallback

        def module_client(m: str) -> Any:
            return client if chosen[m] == "model" else None

        if trigger is not None:  # a language-model Trigger (see .model_trigger)
            from mindhelper_env.agents.mindclaw.model_trigger import make_trigger

            trig = make_trigger(trigger, self.skills)
            trig.reset(self.usage)
        else:
            trig = Trigger(self.skills, policy, features)
        from mindhelper_env.agents.mindclaw.vision import make_eyes

        self.observe = observe
        #: frames -> the text track's observation (None: the text track, see .vision)
        self.eyes = make_eyes(observe, client, self.usage, frames=frames, legend=legend,
                              legend_scale=legend_scale)
        self.engine = Engine(
            MindMemory(),
            trig,
            Observation(module_client("observation"), self.usage, max_tokens,
                        fmts["observation"], fallback),
            MentalReasoning(module_client("reasoning"), self.usage, max_tokens,
                            fmts["reasoning"], fallback),
            ActionGeneration(module_client("action"), self.usage, max_tokens * 2,
                             fmts["action"], fallback),
        )

    @property
    def trace(self) -> list[dict[str, Any]]:
        return self.engine.trace

    @property
    def trigger_ops(self) -> list[dict[str, Any]]:
        return self.engine.trigger_ops

    @property
    def memory(self) -> MindMemory:
        return self.engine.memory

    def belief_snapshot(self) -> dict[int, dict[int, int]]:
        """The committed belief table now (read-only copy; see :class:`MindMemory`)."""
        return self.engine.memory.belief_snapshot()

    def reset(self, *, seed: int | None = None) -> None:
        self.usage = Usage()
        for module in (self.engine.observation, self.engine.reasoning, self.engine.action,
                       *([self.eyes] if self.eyes is not None else [])):
            module.usage = self.usage
        if self.eyes is not None:
            self.eyes.reset()
        self.engine.trigger.policy_errors = 0
        if hasattr(self.engine.trigger, "see"):  # a window-plan Trigger keeps episode state
            self.engine.trigger.reset(self.usage)
        self.engine.reset()

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        t0 = time.perf_counter()
        self.usage.decisions += 1
        seen: list[Any] = []
        if self.eyes is not None:
            observation, info, seen = self.eyes.see(observation, info)
        elif is_rgb_observation(observation):
            raise ValueError("mindclaw on the rgb track (frames only) needs observe='vlm' "
                             "(a model's eyes) or observe='pixels' (the reference parser)")
        if hasattr(self.engine.trigger, "see"):
            self.engine.trigger.see(observation, info)
        try:
            action = self.engine.step(observation, info)
        except (KeyError, TypeError, ValueError, IndexError):
            self.usage.fallbacks += 1
            action = "none"
        if seen and self.engine.trace:  # the eyes' call opens the window's calls
            entry = self.engine.trace[-1]
            entry["calls"] = [c.to_dict() for c in seen] + entry["calls"]
        if self.client is None and not hasattr(self.engine.trigger, "see"):
            # with a model, seconds are the model calls' (as direct-vlm)
            self.usage.seconds += time.perf_counter() - t0
        return action
