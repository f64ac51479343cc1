"""``MindHelper-Trigger-v3``: MindClaw's loop as an MDP whose agent is the Trigger."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from mindhelper_env.envs.virtualhome import MindHelperEnv, merge_reward

__all__ = ["MindHelperTriggerEnv", "TRIGGER_REWARD", "OUTCOMES"]

#: Reward terms of the Trigger env (see the class docstring); override with ``reward={...}``.
TRIGGER_REWARD: dict[str, float] = {
    "precise_help": 1.0,
    "task_success": 0.25,
    "missed": 0.0,
    "false_alarm": -1.0,
    "premature": -0.5,
    "late": -0.5,
    "harm": -1.0,
    "reasoning_cost": -0.02,
    "action_cost": -0.02,
}

#: The episode-outcome flags in ``info["outcome"]`` of the final step (each a reward term).
OUTCOMES = ("precise_help", "task_success", "missed", "false_alarm", "premature", "late",
            "harm")

_INNER_ARGS = ("families", "window_ticks", "observability", "max_ticks", "pool_size",
               "pool_dir", "house", "generator", "narration")


class MindHelperTriggerEnv(gym.Env):
    """
    ## Description

    MindClaw (:mod:`mindhelper_env.agents.mindclaw`) on ``MindHelper-VirtualHome-v3`` with
    the **Trigger** as the learning agent. Each observation window, MindClaw's Engine
    perceives the window (Observation), then asks its Trigger for operations until one ends
    the window (``action_run`` that wrote a program, or ``noop``); the program, or
    ``"none"``, goes to the household env, which advances one window. In this env every
    such question is a ``step``: the agent picks the operation, the Engine executes it with
    MindClaw's own modules (Memory commits, Mental Reasoning, Action Generation; symbolic
    by default, a model if ``model=`` is given) and the env runs on to the next question.

    Questions the Trigger settles without a policy are answered automatically, exactly as
    ``Trigger(policy=fn)`` does inside the ``mindclaw`` agent: deterministic skill matches
    (:mod:`~mindhelper_env.agents.mindclaw.skills`), ``noop`` after
    :data:`~mindhelper_env.agents.mindclaw.trigger.MAX_DISPATCHES` dispatches, and any
    question where ``noop`` is the only valid operation. So a policy trained here plugs into
    ``MindClawAgent(policy=fn, features=policy_observation)`` unchanged
    (``make_agent("learned-trigger")``).

    ## Action Space

    ``Discrete(7)``: an index into
    :data:`~mindhelper_env.agents.mindclaw.trigger.TRIGGER_OPS` — 0
    ``belief_create_visual_fact``, 1 ``belief_update_visual_fact``, 2
    ``belief_create_actor_belief``, 3 ``belief_update_actor_belief``, 4 ``reasoning_run``,
    5 ``action_run``, 6 ``noop``. :meth:`action_masks` (also ``info["action_mask"]``) gives
    the valid ones (:func:`~mindhelper_env.agents.mindclaw.trigger.action_mask`: a belief
    operation needs pending changes, ``reasoning_run`` an unhandled cue, ``action_run`` a
    need found, both only before the robot's intervention; ``noop`` always). A masked
    action is replaced by the rule policy's choice and counted in ``info["masked_actions"]``.

    ## Observation Space

    ``Box(0, 1, (22,), float32)``:
    :func:`~mindhelper_env.agents.mindclaw.trigger.policy_observation` — the 18 documented
    :func:`~mindhelper_env.agents.mindclaw.trigger.trigger_features` (pending changes per
    belief operation, unhandled cues, the next cue's kind and signature flags, skill
    confidence, need found, acted, dispatches, tick) and four flags of the next cue:
    ``expected_missing``, ``astray_class``, ``knows_other`` (the person knows where another
    object of the missing one's class is) and ``usual_seen`` (an object of a class kept at
    the place lies at a usual place)
    (:data:`~mindhelper_env.agents.mindclaw.trigger.OBSERVATION_NAMES`). The observation
    after the last step is all zeros.

    ## Rewards

    Each step: ``reasoning_cost`` per ``reasoning_run`` and ``action_cost`` per
    ``action_run`` executed in it (chosen or automatic; with the symbolic backend reasoning
    is free in tokens but still counted). At the episode end, from the episode record
    (:func:`mindhelper_env.metrics.episode_outcome`): ``precise_help`` (PHR's event: the
    first intervention in [onset, deadline], task success, no harm), ``task_success`` (an
    episode that needs help and the focus person succeeded), ``missed`` (needed help, robot
    never intervened), ``false_alarm``, ``premature``, ``late``, ``harm``. Defaults in
    :data:`TRIGGER_REWARD`: with silence worth 0 and a false alarm −1, the return is a
    linear function of PHA when half the episodes need help, minus the call costs — a good
    policy is precise and frugal.

    ## Episode End

    Terminated when the household episode ends (terminated or truncated there: at its
    horizon, which every episode reaches whatever happened, or at ``max_ticks`` if that is
    below it; after the robot's intervention ``reasoning_run`` and ``action_run`` are masked,
    so only windows with pending belief changes still ask (committing them changes no
    outcome; with a random policy about one step in eight comes after the intervention),
    and the others run automatically); the final ``info`` carries
    ``episode_record`` and ``episode_record_json`` (as ``MindHelper-VirtualHome-v3``'s),
    ``outcome`` (the :data:`OUTCOMES` flags) and ``trace`` is available as
    ``env.unwrapped.agent.trace``. Never truncated by the env itself.

    ## Arguments

    * ``families``, ``window_ticks`` (3), ``observability`` (``"home"``), ``max_ticks``
      (150), ``pool_size``, ``pool_dir``, ``house`` (train in real houses, e.g. ``"tdw"``):
      passed to ``MindHelper-VirtualHome-v3``.
    * ``reward``: overrides of :data:`TRIGGER_REWARD`.
    * ``model``: a model spec (or client) for MindClaw's model backends; default
      ``"symbolic"`` (no model; ``$MINDHELPER_MODEL`` is not read).
    * ``backends``: MindClaw's per-module backends (with ``model``).
    * ``skills``: a skill book or its path (default: the shipped ``skills.json``).
    * ``render_mode``: ``"ansi"`` or ``"rgb_array"``, rendered by the household env.
      Without a render mode and with the symbolic backends, the household env runs quiet
      (nothing here reads or shows its observation: the Engine perceives
      ``obs["events"]`` and ``info``): it writes no narration, hands the events over as
      the list of event dicts instead of JSON text and its candidates without copies,
      which changes no step and saves about 11 % of the instructions of a step.

    ``reset(options=...)`` takes the household env's options (``{"suite": s, "index": i}``,
    ``{"episode": spec}``, ...); sampled episodes come from its episode pool.

    Info each step: ``action_mask``, ``op`` (the operation executed for the action, ``""``
    after a reset), ``window``, ``tick``, ``reasoning_calls`` and ``action_calls`` (this
    episode so far), ``masked_actions``.

    ## Version History

    * v3 (0.8.0): the household is ``MindHelper-VirtualHome-v3`` (``mh-gen-3.2`` episodes:
      timings drawn in the base, 96 ticks, 32 windows); v2 keeps ``mh-gen-3.1``.
    * v2 (0.6.0): the household is ``MindHelper-VirtualHome-v2`` (``mh-gen-3.1`` episodes:
      sight perception); v1 keeps ``mh-gen-3.0``.
    * v1 (0.5.0): the household is ``MindHelper-VirtualHome-v1`` (``mh-gen-3.0`` episodes,
      narration 1); v0 keeps ``mh-gen-2.5`` and narration 0.
    * v0 (0.4.0): initial version. Household episodes run to their horizon, and the
      intervention is the issue of the first acting program (``MindHelper-VirtualHome-v0``
      0.4.0).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, render_mode: str | None = None, *, reward: dict[str, float] | None = None,
                 model: Any = "symbolic", backends: dict[str, str] | None = None,
                 skills: Any = None, **env_kwargs: Any) -> None:
        from mindhelper_env.agents.mindclaw import MindClawAgent
        from mindhelper_env.agents.mindclaw.trigger import (
            OBSERVATION_SIZE,
            TRIGGER_OPS,
            policy_observation,
        )

        unknown = set(env_kwargs) - set(_INNER_ARGS)
        if unknown:
            raise TypeError(f"unexpected arguments {sorted(unknown)}; the household env "
                            f"takes {list(_INNER_ARGS)}")
        self.reward_config = merge_reward(reward, TRIGGER_REWARD)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        self.render_mode = render_mode
        self.household = MindHelperEnv(render_mode=render_mode, **env_kwargs)
        self.agent = MindClawAgent(model if model is not None else "symbolic", skills=skills,
                                   policy=_external_policy, features=policy_observation,
                                   backends=backends)
        # nobody reads the household's narration here without a model or a render (the
        # symbolic modules perceive obs["events"] and info; the policy sees the features),
        # nor needs its events as JSON text or copies of its candidates (the Engine changes
        # none)
        self.household._quiet = render_mode is None and self.agent.client is None
        self.observation_space = spaces.Box(0.0, 1.0, (OBSERVATION_SIZE,), np.float32)
        self.action_space = spaces.Discrete(len(TRIGGER_OPS))
        self._ops = TRIGGER_OPS
        self._mask = np.zeros(len(TRIGGER_OPS), dtype=bool)
        self._mask[-1] = True
        self._done = True
        self._counts = {"reasoning_run": 0, "action_run": 0}
        self._masked = 0
        self._carry = 0.0
        self._pending_final: dict[str, Any] | None = None

    # ------------------------------------------------------------------ properties
    @property
    def engine(self) -> Any:
        return self.agent.engine

    @property
    def vector_index(self) -> int | None:
        return self.household.vector_index

    @vector_index.setter
    def vector_index(self, value: int | None) -> None:
        self.household.vector_index = value

    @property
    def ground_truth(self) -> Any:
        return self.household.ground_truth

    @property
    def episode_spec(self) -> dict[str, Any]:
        return self.household.episode_spec

    @property
    def episode_pool(self) -> Any:
        return self.household.episode_pool

    def episode_record(self) -> dict[str, Any]:
        return self.household.episode_record()

    def action_masks(self) -> np.ndarray:
        """Valid operations now (bool, one per operation; for ``sb3_contrib.MaskablePPO``)."""
        return self._mask.copy()

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        # The household env draws episodes from its own generator, seeded from ours.
        inner_seed = int(self.np_random.integers(0, 2**31 - 1)) if seed is not None else None
        obs, info = self.household.reset(seed=inner_seed, options=options)
        self.agent.reset(seed=seed)
        self._counts = {"reasoning_run": 0, "action_run": 0}
        self._masked = 0
        self._done = False
        self._obs, self._info = obs, info
        self.engine.begin_window(obs, info)
        # Costs of automatic operations before the first question go to the first step; an
        # episode without any question offers only noop, and its first step ends it.
        self._carry, self._pending_final = self._advance()
        if self._pending_final is not None:
            return np.zeros(self.observation_space.shape, np.float32), self._step_info("")
        return self._observation(), self._step_info("")

    def step(self, action: Any):
        if self._done:
            raise gym.error.ResetNeeded("call reset() before step()")
        try:
            idx = int(action)
        except (TypeError, ValueError):
            raise TypeError(f"action must be an int in [0, {len(self._ops)}), "
                            f"got {action!r}") from None
        if not (0 <= idx < len(self._ops) and self._mask[idx]):
            from mindhelper_env.agents.mindclaw.trigger import rule_policy

            self._masked += 1
            op = rule_policy(self.engine.memory, self.engine.state)
        else:
            op = self._ops[idx]
        reward, self._carry = self._carry, 0.0
        if self._pending_final is not None:
            final, self._pending_final = self._pending_final, None
            self._done = True
            info = self._step_info("noop")
            info.update(final)
            return (np.zeros(self.observation_space.shape, np.float32), float(reward), True,
                    False, info)
        reward += self._cost(op)
        final = None
        if self.engine.execute(op):
            more, final = self._finish_window()
            reward += more
        if final is None:
            more, final = self._advance()
            reward += more
        if final is not None:
            self._done = True
            info = self._step_info(op)
            info.update(final)
            return (np.zeros(self.observation_space.shape, np.float32), float(reward), True,
                    False, info)
        return self._observation(), float(reward), False, False, self._step_info(op)

    # ------------------------------------------------------------------ internals
    def _cost(self, op: str) -> float:
        if op == "reasoning_run" and self.engine.state.next_cue() is not None:
            self._counts[op] += 1
            return self.reward_config["reasoning_cost"]
        if op == "action_run" and self.engine.state.needs:
            self._counts[op] += 1
            return self.reward_config["action_cost"]
        return 0.0

    def _advance(self) -> tuple[float, dict[str, Any] | None]:
        """Run automatic operations (and windows) until the policy must choose or the
        episode ends; returns the reward collected and the final info entries (or None)."""
        from mindhelper_env.agents.mindclaw.trigger import mask_flags

        engine = self.engine
        reward = 0.0
        while True:
            state = engine.state
            op = engine.trigger.automatic(engine.memory, state)
            if op is None:
                flags = mask_flags(state)  # action_mask's values; an array only when asked
                if any(flags[:-1]):
                    self._mask = np.array(flags, dtype=bool)
                    return reward, None
                op = "noop"
            reward += self._cost(op)
            if engine.execute(op):
                more, final = self._finish_window()
                reward += more
                if final is not None:
                    return reward, final

    def _finish_window(self) -> tuple[float, dict[str, Any] | None]:
        program = self.engine.end_window()
        obs, _r, terminated, truncated, info = self.household.step(program)
        if terminated or truncated:
            self._mask = np.zeros(len(self._ops), dtype=bool)
            self._mask[-1] = True
            return self._outcome_reward(info)
        self._obs, self._info = obs, info
        self.engine.begin_window(obs, info)
        return 0.0, None

    def _outcome_reward(self, last_info: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """The outcome reward and the final info entries, from the household's last step
        (``last_info``: its record entries are the episode's, as ``record_info`` gives them)."""
        from mindhelper_env.metrics import episode_outcome

        record = self.household.episode_record()
        out = episode_outcome(record, record["reference"])
        flags = {
            "precise_help": bool(out["helpful_precise"]),
            "task_success": bool(out["needs_help"] and out["success"]),
            "missed": bool(out["missed"]),
            "false_alarm": bool(out["false_alarm"]),
            "premature": bool(out["premature"]),
            "late": bool(out["late"]),
            "harm": bool(out["harm"]),
        }
        reward = sum(self.reward_config[k] for k, v in flags.items() if v)
        final = {k: last_info[k] for k in ("episode_record", "episode_record_json")}
        final["outcome"] = flags
        return float(reward), final

    def _observation(self) -> np.ndarray:
        engine = self.engine
        return engine.trigger.observe(engine.memory, engine.state).astype(np.float32)

    def _step_info(self, op: str) -> dict[str, Any]:
        return {
            "action_mask": self._mask.copy(),
            "op": op,
            "window": int(self.engine.window),
            "tick": int(self.engine.state.tick),
            "reasoning_calls": int(self._counts["reasoning_run"]),
            "action_calls": int(self._counts["action_run"]),
            "masked_actions": int(self._masked),
        }

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' "
                            "or 'rgb_array' to the constructor")
            return None
        return self.household.render()

    def close(self) -> None:
        self.household.close()
        super().close()


def _external_policy(features: np.ndarray, mask: np.ndarray) -> int:
    """Placeholder policy: the env's agent is outside; the Engine never calls this."""
    raise RuntimeError("the Trigger env's policy is the agent calling step()")
