"""MindHelper as a verifiers environment: ``load_environment(...)`` for verifiers' trainers
and evaluators (the ``verifiers`` extra).

>>> from mindhelper_env.llm_training.vf_env import load_environment   # doctest: +SKIP
>>> env = load_environment(num_train_examples=256)                    # doctest: +SKIP
>>> results = env.evaluate_sync(client=..., model=..., num_examples=8)  # doctest: +SKIP

The environment is a ``verifiers.MultiTurnEnv`` over the Gymnasium env
``MindHelper-VirtualHome-v3``, not a second environment. Each rollout is one episode on a
training seed (never a suite episode): the prompt is the first observation rendered as text
as the TRL adapter renders it (:mod:`.trl`: tick, narration, the people); each model turn
answers one observation window with a program of script lines (``[walk] <fridge> (132);
[open] <fridge> (132)``) or ``none``; the env steps the Gymnasium env with it and replies
with the next window. A reply that is neither ``none`` nor contains a script line is a
counted fallback: the robot stays silent in that window and the model is told so
(``fallbacks``); lines the env could not run come back as "Not run: ..." and are counted
(``action_errors``). When the rollout stops before the episode ends (``max_turns``, a model
error), the rest is played silently, as in the TRL adapter.

The rubric scores each episode with the package's own metrics
(:func:`mindhelper_env.llm_training.trl.episode_score`, built on
:func:`mindhelper_env.metrics.episode_outcome`), one reward function per component:
``precise_intervention`` (PIR's event, weight 0), ``precise_silence`` (PSR's event, weight
1), ``helpful`` (PHR's event: precise, task done, no harm; weight 1) and ``harm`` (weight
-1), so the rollout's reward is the TRL adapter's reward, helpful + precise_silence - harm
(the episode's share of PHA). ``needs_help``, ``fallbacks``, ``action_errors`` and
``windows`` are reported as metrics (weight 0).

Episodes come from a ``datasets.Dataset`` of seeds (:func:`seed_dataset`): each row's
``info`` names ``family``, ``seed`` and ``env_seed``; the rollout generates exactly that
episode (:func:`mindhelper_env.scenarios.generator.generate_episode`) and resets its own
Gymnasium env with ``seed=env_seed``. Nothing here touches the process-global random state.

Importing this module imports neither verifiers nor datasets; :func:`load_environment`
does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from mindhelper_env.llm_training.trl import _describe, episode_score

__all__ = ["load_environment", "seed_dataset", "parse_reply", "SYSTEM_PROMPT",
           "REWARD_WEIGHTS", "ENV_ID"]

ENV_ID = "MindHelper-VirtualHome-v3"
SYSTEM_PROMPT = (
    "You are a household robot helper watching people at home. After each observation "
    "window answer with exactly one of: `none` to stay silent, or a program of script "
    "lines separated by ';', such as \"[walk] <fridge> (132); [open] <fridge> (132); "
    "[grab] <apple> (151); [give] <apple> (151) <character> (2)\", when someone is blocked "
    "by a false belief or an implicit goal. Help only when it is needed, and as soon as it "
    "is. Answer with the program or `none` and nothing else.")
#: The rubric's reward functions and their weights: the weighted sum is the TRL adapter's
#: reward, helpful + precise_silence - harm (:func:`.trl.episode_score`).
REWARD_WEIGHTS = {"precise_intervention": 0.0, "precise_silence": 1.0, "helpful": 1.0,
                  "harm": -1.0}
#: Reported with weight 0.
METRICS = ("needs_help", "fallbacks", "action_errors", "windows")
OVER = "The episode is over."

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[A-Za-z0-9_-]*")


def _text(content: Any) -> str:
    """The text of a message's content (a string, a list of parts, or None)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)


def parse_reply(text: str | None) -> tuple[str, bool]:
    """``(program, fallback)`` for one model reply: ``("none", False)`` for silence
    (``none``, in any case, with or without quotes or code fences); the reply (thinking
    and fences removed) when at least one of its lines parses as a script line — the env
    reports the lines it cannot run; otherwise ``("none", True)``, a counted fallback."""
    from mindhelper_env.world.script import is_silence, parse_program

    body = _FENCE.sub("\n", _THINK.sub("", text or "")).strip()
    if is_silence(body.strip("`'\". ")):
        return "none", False
    lines, _errors = parse_program(body)
    if lines:
        return body, False
    return "none", True


def seed_dataset(n: int, seed: int = 0, system_prompt: str = SYSTEM_PROMPT) -> Any:
    """A ``datasets.Dataset`` of ``n`` training episodes (half need help, families drawn as
    the envs draw them; :func:`mindhelper_env.validity.training_episodes`): columns
    ``prompt`` (``system_prompt`` and "The episode begins."; the rollout appends the
    first observation) and ``info`` (``family``, ``seed``, ``env_seed``)."""
    from datasets import Dataset

    from mindhelper_env.validity import training_episodes

    rows = []
    for spec in training_episodes(int(n), seed=int(seed)):
        rows.append({"prompt": [{"role": "system", "content": str(system_prompt)},
                                {"role": "user", "content": "The episode begins. "}],
                     "info": {"family": str(spec["family"]), "seed": int(spec["seed"]),
                              "env_seed": int(spec["seed"])}})
    return Dataset.from_list(rows)


def _finish(book: dict[str, Any], info: Mapping[str, Any]) -> None:
    full = json.loads(info["episode_record_json"])
    book["done"] = True
    book["outcome"] = episode_score(full, full["reference"])


def _step(env: Any, book: dict[str, Any], program: str) -> str:
    """Play one window; returns what the robot sees next (or :data:`OVER`)."""
    obs, _r, term, trunc, info = env.step(program)
    book["windows"] += 1
    err = info.get("action_error")
    if err:
        book["action_errors"] += 1
    if term or trunc:
        _finish(book, info)
        return OVER
    return (f"Not run: {err}. " if err else "") + _describe(obs, info)


def _score(key: str) -> Any:
    def func(state: Any) -> float:
        return float(state["mindhelper"]["outcome"][key])

    func.__name__ = key
    return func


def _count(key: str) -> Any:
    def func(state: Any) -> float:
        book = state["mindhelper"]
        return float(book["outcome"][key] if key == "needs_help" else book[key])

    func.__name__ = key
    return func


@cache
def _env_class() -> type:
    import gymnasium as gym
    import verifiers as vf

    import mindhelper_env  # noqa: F401  (registers the envs)
    from mindhelper_env.scenarios.generator import generate_episode

    class MindHelperVfEnv(vf.MultiTurnEnv):
        """One MindHelper episode per rollout (see :mod:`mindhelper_env.llm_training.vf_env`)."""

        async def setup_state(self, state: Any) -> Any:
            row = state["info"]
            if not isinstance(row, Mapping) or "family" not in row or "seed" not in row:
                raise ValueError(f"MindHelper verifiers env: the row's info needs 'family' "
                                 f"and 'seed', got {row!r}")
            env = gym.make(ENV_ID, pool_size=0)
            spec = generate_episode(str(row["family"]), int(row["seed"]))
            env_seed = int(row.get("env_seed", row["seed"]))
            obs, info = env.reset(seed=env_seed, options={"episode": spec})
            state["mindhelper_env"] = env
            state["mindhelper"] = {"family": str(row["family"]), "seed": int(row["seed"]),
                                   "env_seed": env_seed, "done": False, "windows": 0,
                                   "fallbacks": 0, "action_errors": 0, "outcome": {}}
            prompt = list(state["prompt"])
            first = _describe(obs, info)
            if prompt and getattr(prompt[-1], "role", None) == "user":
                head = _text(prompt[-1].content)
                prompt[-1] = vf.UserMessage(content=head + first)
            else:
                prompt.append(vf.UserMessage(content=first))
            state["prompt"] = prompt
            return state

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            env, book = state["mindhelper_env"], state["mindhelper"]
            if book["done"]:
                reply = [vf.UserMessage(content=OVER)]
                state["final_env_response"] = reply
                return reply
            last = messages[-1] if messages else None
            program, fallback = parse_reply(_text(getattr(last, "content", None)))
            note = ""
            if fallback:
                book["fallbacks"] += 1
                note = ("Not understood (answer with script lines or none): stayed silent "
                        "in that window. ")
            seen = _step(env, book, program)
            reply = [vf.UserMessage(content=seen if seen == OVER else note + seen)]
            if book["done"]:
                state["final_env_response"] = reply
            return reply

        @vf.cleanup
        async def finish_episode(self, state: Any) -> None:
            """Play the rest of an unfinished episode silently, then close its env."""
            env = state.get("mindhelper_env")
            if env is None:
                return
            try:
                book = state["mindhelper"]
                while not book["done"]:
                    _step(env, book, "none")
            finally:
                state.pop("mindhelper_env", None)
                env.close()

    return MindHelperVfEnv


def load_environment(num_train_examples: int = 256, seed: int = 0,
                     num_eval_examples: int = 0, eval_seed: int = 1,
                     dataset: Any = None, eval_dataset: Any = None,
                     max_turns: int = -1, system_prompt: str = SYSTEM_PROMPT,
                     **kwargs: Any) -> Any:
    """A verifiers ``MultiTurnEnv`` of MindHelper episodes (see the module docstring).

    ``dataset`` (default ``seed_dataset(num_train_examples, seed)``) and ``eval_dataset``
    (default ``seed_dataset(num_eval_examples, eval_seed)`` when ``num_eval_examples`` > 0,
    else none: verifiers then evaluates on the training rows) are datasets of seeds, rows as
    :func:`seed_dataset` makes them (with ``system_prompt``). ``max_turns`` caps the model turns (the rest of the
    episode is then played silently; -1: the episode's own length). Other keywords go to
    ``MultiTurnEnv``."""
    import verifiers as vf

    if dataset is None:
        dataset = seed_dataset(num_train_examples, seed, system_prompt)
    if eval_dataset is None and num_eval_examples > 0:
        eval_dataset = seed_dataset(num_eval_examples, eval_seed, system_prompt)
    rubric = vf.Rubric(funcs=[_score(k) for k in REWARD_WEIGHTS],
                       weights=list(REWARD_WEIGHTS.values()))
    for key in METRICS:
        rubric.add_metric(_count(key))
    return _env_class()(dataset=dataset, eval_dataset=eval_dataset, rubric=rubric,
                        max_turns=max_turns, **kwargs)
