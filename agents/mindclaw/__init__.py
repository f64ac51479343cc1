"""MindClaw: Engine, Memory, Trigger, reasoning layer (Observation, Mental Reasoning,
Action Generation) and mined skills.

* :mod:`.memory` — the belief table (visual facts, per-person beliefs with tick and
  evidence) committed on top of :class:`~mindhelper_env.agents.tracker.BeliefTracker`;
* :mod:`.trigger` — the seven operations (:data:`TRIGGER_OPS`), skill matchers, the rule
  policy, and the feature vector and action mask a learned policy plugs into;
* :mod:`.reasoning` — the three modules, each with a symbolic and a model backend;
* :mod:`.skills` — skill mining from rollouts, load/save, the shipped ``skills.json``;
* :mod:`.engine` — the per-window loop and its trace;
* :mod:`.learned` — a learned Trigger policy run with numpy (``learned-trigger``);
* :mod:`.agent` — :class:`MindClawAgent`, registered as ``mindclaw``.

Importing this package imports no model SDK.
"""

from __future__ import annotations

from mindhelper_env.agents.mindclaw.agent import MindClawAgent
from mindhelper_env.agents.mindclaw.memory import MindMemory
from mindhelper_env.agents.mindclaw.skills import SkillBook, default_skills, mine_skills
from mindhelper_env.agents.mindclaw.trigger import (
    FEATURE_NAMES,
    TRIGGER_FEATURE_SIZE,
    TRIGGER_OPS,
    Trigger,
    WindowState,
    action_mask,
    trigger_features,
)

__all__ = ["MindClawAgent", "MindMemory", "SkillBook", "default_skills", "mine_skills",
           "TRIGGER_OPS", "TRIGGER_FEATURE_SIZE", "FEATURE_NAMES", "Trigger", "WindowState",
           "trigger_features", "action_mask"]
