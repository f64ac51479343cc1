"""The learned Trigger: training speed, time to target, and suite scores.

Run: ``python benchmarks/bench_trigger.py [--parts ratio,speed,train,suite] [--repeats 3]``
(needs the ``rl`` extra for ``ratio``, ``speed`` and ``train``). Reports medians over
repeats.

* ``ratio``: MaskablePPO learning with 2 envs (DummyVecEnv, ``n_steps=512``,
  ``batch_size=256``) on ``MindHelper-Trigger-v3`` from a **cold** episode pool (a fresh
  ``MINDHELPER_CACHE_DIR`` per run and the env's default pool, as a user's first run has
  it) against the same learner on sb3-contrib's ``InvalidActionEnvDiscrete`` (the peer),
  run interleaved (peer, ours, peer, ours, ...) so that both see the same machine load;
  env steps/s of each (the whole ``learn`` call, from a model built on fresh envs) and the
  ratio ours / peer of each pair and of the medians; ``--vec both`` also runs each pair on
  ``SubprocVecEnv`` (one process per env) and reports ours there against the peer on
  DummyVecEnv (``best_vs_best``: each side in its fastest set-up; ``--vec lean``,
  ``--vec spin`` and ``--vec hybrid`` do the same on leaner process vector envs). Each
  pair also runs the same learner on a **replay** of ours (:class:`TapeEnv`: whole
  episodes of ``MindHelper-Trigger-v3`` under masked random actions, recorded beforehand,
  played back with their observations, rewards, masks and ``info`` dicts behind the
  wrappers ``gym.make`` adds): the learner's cost with our observation and ``info`` shapes
  and no simulation, which is the ceiling of the ratio (``replay_vs_peer``). The budget of one
  step from the medians (:func:`step_budget`): the learner's milliseconds per step on the
  replay, ours, the env's share (the difference) and the share a ratio of 0.8 would leave
  it. ``--split`` also times the phases of each DummyVecEnv run (per step of the vector
  env: ``train``, the gradient updates; ``env``, the two envs' steps through the vector
  env; ``masks``; ``rest``, the learner's own rollout work), which tells the env's cost
  from what the env does to the learner's own work around it;

* ``speed``: env steps/s of ``MindHelper-Trigger-v3`` alone (masked random actions) and of
  ``MaskablePPO`` learning with 2 envs (DummyVecEnv; the settings of ``mindhelper
  train-trigger``), both on a warm episode pool;
* ``train``: ``train(...)`` from scratch (fresh weights; label behaviour cloning on
  ``--bc-episodes`` training episodes, then MaskablePPO) until the **target** — held-out
  PHA (200 training-seed episodes the pool never plays) at most 1 point below the rule
  Trigger's, with fewer ``reasoning_run`` calls per episode — and the wall time to reach
  it, counting everything (held-out set and rule baseline, BC data, BC, learning); writes
  the run (learning curve included) to ``--out``/seed-K;
* ``suite``: the rule Trigger (``mindclaw``, symbolic) against ``learned-trigger`` (the
  shipped ``learned_trigger.npz``, or ``--policy``) on ``--suite`` (default ``vh-test-v5``)
  through the evaluation runner: PHA, PHR, PSR and ``reasoning_run`` operations per
  episode (mean and median, counted in each record's trace).

``--ship`` copies the policy of the first ``train`` repeat to
``agents/mindclaw/learned_trigger.npz``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import mindhelper_env  # noqa: F401  (registers the envs)

POOL = 1024


def bench_env(n_steps: int = 6000) -> float:
    env = gym.make("MindHelper-Trigger-v3", pool_size=POOL)
    env.unwrapped.episode_pool.fill()
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    t0 = time.perf_counter()
    for _ in range(n_steps):
        a = int(rng.choice(np.flatnonzero(env.unwrapped.action_masks())))
        _o, _r, term, trunc, _i = env.step(a)
        if term or trunc:
            env.reset()
    return n_steps / (time.perf_counter() - t0)


def bench_ppo(n_steps: int = 30_720) -> float:
    import torch
    from stable_baselines3.common.env_util import make_vec_env

    from mindhelper_env.agents.mindclaw.training import _make_model

    torch.set_num_threads(1)
    gym.make("MindHelper-Trigger-v3", pool_size=POOL).unwrapped.episode_pool.fill()
    vec = make_vec_env("MindHelper-Trigger-v3", n_envs=2, seed=0,
                       env_kwargs={"pool_size": POOL})
    model = _make_model("maskable-ppo", vec, 0, None)
    model.learn(2048)  # warm-up
    t0 = time.perf_counter()
    model.learn(n_steps, reset_num_timesteps=False)
    rate = n_steps / (time.perf_counter() - t0)
    vec.close()
    return rate


def _ppo_rate(vec, n_steps: int, split: dict | None = None) -> float:
    """Env steps/s of one ``MaskablePPO.learn(n_steps)`` on ``vec``, from fresh weights.

    With a ``split`` dict, also times the phases of the run (:func:`_time_phases`) and
    writes them there, in milliseconds per step of the vector env."""
    import torch
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(1)
    model = MaskablePPO("MlpPolicy", vec, n_steps=512, batch_size=256, n_epochs=4,
                        learning_rate=5e-4, gamma=1.0, ent_coef=0.005, seed=0, device="cpu",
                        verbose=0, policy_kwargs={"net_arch": [32, 32]})
    spent = _time_phases(model, vec) if split is not None else None
    t0 = time.perf_counter()
    model.learn(n_steps)
    whole = time.perf_counter() - t0
    rate = n_steps / whole
    if spent is not None:
        vec_steps = n_steps / vec.num_envs
        split.update({k: round(v / vec_steps * 1e3, 4) for k, v in spent.items()})
        split["rest"] = round((whole - sum(spent.values())) / vec_steps * 1e3, 4)
        split["whole"] = round(whole / vec_steps * 1e3, 4)
    vec.close()
    return rate


def _time_phases(model, vec) -> dict:
    """Wraps ``model.train`` (the gradient updates), ``vec.step`` (the envs' steps, resets
    and wrappers, through the vector env) and ``vec.env_method`` (the masks MaskablePPO asks
    for before each step) with timers; returns the seconds spent in each, filled in as the
    model learns. What is left of the run (``rest`` in :func:`_ppo_rate`'s split) is the
    learner's own rollout work: the policy's forward pass, the rollout buffer, callbacks."""
    spent = {"train": 0.0, "env": 0.0, "masks": 0.0}
    clock = time.perf_counter

    def timed(key, fn):
        def call(*args, **kwargs):
            t = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] += clock() - t
        return call

    model.train = timed("train", model.train)
    vec.step = timed("env", vec.step)
    vec.env_method = timed("masks", vec.env_method)
    return spent


def _vec_cls(vec: str):
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    if vec == "lean":
        return _lean_vec_cls()
    if vec == "spin":
        return _spin_vec_cls()
    if vec == "hybrid":
        return _spin_vec_cls(local=1)
    return SubprocVecEnv if vec == "subproc" else DummyVecEnv


def _worker_step(env, masks, action) -> tuple:
    """One step of a worker's env as SubprocVecEnv's workers take it (reset when the
    episode ends, the last observation in ``info``), with the next masks."""
    obs, reward, terminated, truncated, info = env.step(action)
    done = terminated or truncated
    info["TimeLimit.truncated"] = truncated and not terminated
    reset_info = None
    if done:
        info["terminal_observation"] = obs
        obs, reset_info = env.reset()
    return obs, reward, done, info, reset_info, masks()


def _lean_worker(remote, parent_remote, env_fn) -> None:
    """One env in its own process for :func:`_lean_vec_cls`: each step's reply carries the
    env's next masks (after the reset of an episode that ended)."""
    from stable_baselines3.common.env_util import is_wrapped
    from stable_baselines3.common.vec_env.patch_gym import _patch_env

    parent_remote.close()
    env = _patch_env(env_fn.var())
    masks = env.get_wrapper_attr("action_masks")
    while True:
        try:
            cmd, data = remote.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if cmd == "step":
            remote.send(_worker_step(env, masks, data))
        elif cmd == "reset":
            obs, reset_info = env.reset(seed=data[0], **({"options": data[1]} if data[1] else {}))
            remote.send((obs, reset_info, masks()))
        elif cmd == "close":
            env.close()
            remote.close()
            return
        elif cmd == "get_spaces":
            remote.send((env.observation_space, env.action_space))
        elif cmd == "env_method":
            remote.send(env.get_wrapper_attr(data[0])(*data[1], **data[2]))
        elif cmd == "get_attr":
            remote.send(env.get_wrapper_attr(data))
        elif cmd == "has_attr":
            try:
                env.get_wrapper_attr(data)
                remote.send(True)
            except AttributeError:
                remote.send(False)
        elif cmd == "set_attr":
            setattr(env, data[0], data[1])
            remote.send(None)
        elif cmd == "is_wrapped":
            remote.send(is_wrapped(env, data))


def _lean_vec_cls():
    """SubprocVecEnv with one message each way per step: the masks MaskablePPO asks for
    before each step come with the step's reply (and the reset's) instead of a second round
    trip through ``env_method``; workers are forked. The process set-up at its leanest, to
    measure what lockstep between processes costs on this machine."""
    import multiprocessing as mp

    from stable_baselines3.common.vec_env import SubprocVecEnv, VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import CloudpickleWrapper
    from stable_baselines3.common.vec_env.subproc_vec_env import _stack_obs

    class LeanSubprocVecEnv(SubprocVecEnv):
        def __init__(self, env_fns) -> None:
            self.waiting, self.closed, self._masks = False, False, None
            ctx = mp.get_context("fork")
            self.remotes, self.work_remotes = zip(*[ctx.Pipe() for _ in env_fns], strict=True)
            self.processes = []
            for work, remote, fn in zip(self.work_remotes, self.remotes, env_fns, strict=True):
                proc = ctx.Process(target=_lean_worker, daemon=True,
                                   args=(work, remote, CloudpickleWrapper(fn)))
                proc.start()
                self.processes.append(proc)
                work.close()
            self.remotes[0].send(("get_spaces", None))
            VecEnv.__init__(self, len(env_fns), *self.remotes[0].recv())

        def step_wait(self):
            results = [remote.recv() for remote in self.remotes]
            self.waiting = False
            obs, rewards, dones, infos, self.reset_infos, masks = zip(*results, strict=True)
            self._masks = list(masks)
            return (_stack_obs(obs, self.observation_space), np.stack(rewards), np.stack(dones),
                    infos)

        def reset(self):
            for k, remote in enumerate(self.remotes):
                remote.send(("reset", (self._seeds[k], self._options[k])))
            obs, self.reset_infos, masks = zip(*[remote.recv() for remote in self.remotes], strict=True)
            self._masks = list(masks)
            self._reset_seeds()
            self._reset_options()
            return _stack_obs(obs, self.observation_space)

        def env_method(self, name, *args, indices=None, **kwargs):
            if name == "action_masks" and not args and not kwargs and self._masks is not None:
                return [self._masks[k].copy() for k in self._get_indices(indices)]
            self._masks = None  # anything else may change the envs: ask them next time
            return super().env_method(name, *args, indices=indices, **kwargs)

    return LeanSubprocVecEnv


def _spin_wait(conn, budget: float = 0.005) -> None:
    """Until ``conn`` has a message: polls without sleeping for up to ``budget`` seconds
    (no wake-up to pay when the answer comes within it), then blocks."""
    if conn.poll():
        return
    end = time.perf_counter() + budget
    n = 0
    while not conn.poll():
        n += 1
        if n % 64 == 0 and time.perf_counter() > end:
            conn.poll(None)
            return


def _spin_worker(remote, parent_remote, env_fns) -> None:
    """All the envs of :func:`_spin_vec_cls` in one process: steps them one after the other
    and replies once per vector step, the masks included; spin-waits for the next command."""
    from stable_baselines3.common.vec_env.patch_gym import _patch_env

    parent_remote.close()
    envs = [_patch_env(fn()) for fn in env_fns.var]
    masks = [env.get_wrapper_attr("action_masks") for env in envs]
    while True:
        _spin_wait(remote)
        try:
            cmd, data = remote.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if cmd == "step":
            remote.send([_worker_step(*args) for args in zip(envs, masks, data, strict=True)])
        elif cmd == "reset":
            out = []
            for env, mask, (seed, options) in zip(envs, masks, data, strict=True):
                obs, reset_info = env.reset(seed=seed, **({"options": options} if options else {}))
                out.append((obs, reset_info, mask()))
            remote.send(out)
        elif cmd == "spaces":
            remote.send((envs[0].observation_space, envs[0].action_space,
                         getattr(envs[0], "render_mode", None)))
        elif cmd == "close":
            for env in envs:
                env.close()
            remote.close()
            return


def _spin_vec_cls(local: int = 0):
    """A vector env for MaskablePPO whose envs run in **one** forked worker that spin-waits
    for its next command: no wake-up between steps (the lean set-up's cost), one message
    each way per vector step, the masks with it. The worker's envs step one after the
    other. With ``local=0`` the learner's process runs none of the simulation, so it can
    only win if the env runs faster away from the learner; with ``local=1`` (``--vec
    hybrid``) the learner's process steps the first env itself while the worker steps the
    others, so the two CPUs step the two envs at the same time. Enough of the VecEnv API
    for ``MaskablePPO.learn``; the worker blocks after 5 ms without a command (the
    gradient updates)."""
    import multiprocessing as mp

    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import CloudpickleWrapper
    from stable_baselines3.common.vec_env.patch_gym import _patch_env

    class SpinVecEnv(VecEnv):
        def __init__(self, env_fns) -> None:
            env_fns = list(env_fns)
            ctx = mp.get_context("fork")
            self.remote, work = ctx.Pipe()
            self.process = ctx.Process(target=_spin_worker, daemon=True,
                                       args=(work, self.remote,
                                             CloudpickleWrapper(env_fns[local:])))
            self.process.start()
            work.close()
            self.envs = [_patch_env(fn()) for fn in env_fns[:local]]
            self._mask_fns = [env.get_wrapper_attr("action_masks") for env in self.envs]
            self.remote.send(("spaces", None))
            obs_space, act_space, self._render_mode = self.remote.recv()
            self._masks: list = []
            self._actions: list = []
            VecEnv.__init__(self, len(env_fns), obs_space, act_space)

        def step_async(self, actions) -> None:
            self.remote.send(("step", list(actions[local:])))
            self._actions = list(actions[:local])

        def step_wait(self):
            mine = [_worker_step(*args)
                    for args in zip(self.envs, self._mask_fns, self._actions, strict=True)]
            _spin_wait(self.remote)
            obs, rewards, dones, infos, self.reset_infos, masks = zip(*mine, *self.remote.recv(),
                                                                      strict=True)
            self._masks = list(masks)
            return (np.stack(obs), np.array(rewards, dtype=np.float32), np.array(dones),
                    list(infos))

        def reset(self):
            n = self.num_envs
            self.remote.send(("reset", [(self._seeds[k], self._options[k])
                                        for k in range(local, n)]))
            mine = []
            for k, (env, mask) in enumerate(zip(self.envs, self._mask_fns, strict=True)):
                options = self._options[k]
                obs, reset_info = env.reset(seed=self._seeds[k],
                                            **({"options": options} if options else {}))
                mine.append((obs, reset_info, mask()))
            _spin_wait(self.remote)
            obs, self.reset_infos, masks = zip(*mine, *self.remote.recv(), strict=True)
            self._masks = list(masks)
            self._reset_seeds()
            self._reset_options()
            return np.stack(obs)

        def env_method(self, name, *args, indices=None, **kwargs):
            if name != "action_masks" or args or kwargs:
                raise NotImplementedError(f"SpinVecEnv only answers action_masks, not {name}")
            return [self._masks[k].copy() for k in self._get_indices(indices)]

        def has_attr(self, attr_name: str) -> bool:
            return attr_name == "action_masks"

        def get_attr(self, attr_name, indices=None):
            if attr_name != "render_mode":
                raise NotImplementedError(f"SpinVecEnv only answers render_mode, not {attr_name}")
            return [self._render_mode for _ in self._get_indices(indices)]

        def set_attr(self, attr_name, value, indices=None) -> None:
            raise NotImplementedError("SpinVecEnv sets no attributes")

        def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
            return [False for _ in self._get_indices(indices)]

        def close(self) -> None:
            self.remote.send(("close", None))
            self.process.join(5)
            for env in self.envs:
                env.close()

    return SpinVecEnv


def _peer_env():
    from sb3_contrib.common.envs import InvalidActionEnvDiscrete

    return InvalidActionEnvDiscrete(dim=7, n_invalid_actions=3)


def bench_peer(n_steps: int, vec: str = "dummy", split: dict | None = None) -> float:
    """MaskablePPO on sb3-contrib's own ``InvalidActionEnvDiscrete`` (7 actions, 3 masked)."""
    from stable_baselines3.common.env_util import make_vec_env

    vec_env = make_vec_env(_peer_env, n_envs=2, seed=0, vec_env_cls=_vec_cls(vec))
    return _ppo_rate(vec_env, n_steps, split)


def bench_cold(n_steps: int, vec: str = "dummy", split: dict | None = None) -> float:
    """MaskablePPO on ``MindHelper-Trigger-v3`` (default pool) in a fresh cache directory."""
    import os

    from stable_baselines3.common.env_util import make_vec_env

    old = os.environ.get("MINDHELPER_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="mindhelper-cold-") as tmp:
        os.environ["MINDHELPER_CACHE_DIR"] = tmp
        try:
            vec_env = make_vec_env("MindHelper-Trigger-v3", n_envs=2, seed=0,
                                   vec_env_cls=_vec_cls(vec))
            return _ppo_rate(vec_env, n_steps, split)
        finally:
            if old is None:
                os.environ.pop("MINDHELPER_CACHE_DIR", None)
            else:
                os.environ["MINDHELPER_CACHE_DIR"] = old


class TapeEnv(gym.Env):
    """Plays back recorded episodes of ``MindHelper-Trigger-v3`` whatever the actions are:
    each ``reset`` starts the next recorded episode (cycling), each ``step`` returns the
    recorded observation, reward, flags and a fresh copy of the recorded ``info``, and
    :meth:`action_masks` the recorded mask. What the learner pays on it is its own cost
    with our observation and ``info`` shapes, without the simulation."""

    def __init__(self, tape: list, observation_space, action_space) -> None:
        self.tape = tape
        self.observation_space, self.action_space = observation_space, action_space
        self._episode = -1
        self._k = 0
        self._mask = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._episode = (self._episode + 1) % len(self.tape)
        self._k = 0
        obs, info, self._mask = self.tape[self._episode][0]
        return obs, dict(info)

    def step(self, action):
        obs, reward, terminated, truncated, info, self._mask = \
            self.tape[self._episode][1][self._k]
        self._k += 1
        return obs, reward, terminated, truncated, dict(info)

    def action_masks(self) -> np.ndarray:
        return self._mask.copy()


def record_tape(n_steps: int, seed: int = 0) -> tuple[list, gym.Space, gym.Space]:
    """Whole episodes of ``MindHelper-Trigger-v3`` (default pool) under masked random actions,
    at least ``n_steps`` steps in all, for :class:`TapeEnv`."""
    env = gym.make("MindHelper-Trigger-v3")
    rng = np.random.default_rng(seed)
    tape, steps = [], 0
    obs, info = env.reset(seed=seed)
    while True:
        mask = env.unwrapped.action_masks()
        episode = [(obs, info, mask), []]
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(
                int(rng.choice(np.flatnonzero(mask))))
            mask = env.unwrapped.action_masks()
            done = terminated or truncated
            episode[1].append((obs, reward, terminated, truncated, info, mask))
        tape.append(episode)
        steps += len(episode[1])
        if steps >= n_steps:
            break
        obs, info = env.reset()
    spaces = (env.observation_space, env.action_space)
    env.close()
    return tape, *spaces


def bench_replay(n_steps: int, tape: tuple, split: dict | None = None) -> float:
    """The ratio part's learner on :class:`TapeEnv` (2 envs, DummyVecEnv), wrapped as
    ``gym.make`` wraps ours (order enforcing, passive checker; ``make_vec_env`` adds
    ``Monitor``)."""
    from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker
    from stable_baselines3.common.env_util import make_vec_env

    vec_env = make_vec_env(lambda: OrderEnforcing(PassiveEnvChecker(TapeEnv(*tape))),
                           n_envs=2, seed=0)
    return _ppo_rate(vec_env, n_steps, split)


def bench_ratio(repeats: int, n_steps: int, vec: str = "dummy", split: bool = False) -> dict:
    """Peer and ours, both on ``DummyVecEnv`` (the goal's measure); with ``vec="both"`` each
    pair also runs both on ``SubprocVecEnv`` (one process per env), and the report adds
    ``best_vs_best``: ours on subprocesses against the peer on DummyVecEnv (the fastest
    set-up of each: a peer this cheap only loses to the pipes). ``vec="lean"`` does the same
    on :func:`_lean_vec_cls` (keys ``*_lean``).

    ``vec="spin"`` does the same on :func:`_spin_vec_cls` (keys ``*_spin``), and
    ``vec="hybrid"`` on it with the first env in the learner's process (keys ``*_hybrid``).

    With ``split``, each DummyVecEnv run (and ours on the ``vec`` set-up) also times its
    phases (:func:`_time_phases`): per
    step of the vector env (2 env steps), the gradient updates (``train``), the envs'
    steps (``env``), the masks (``masks``) and the learner's own rollout work (``rest``);
    the report adds the median of each phase for the peer, ours and the replay."""
    peer, ours, replay, peer_sp, ours_sp = [], [], [], [], []
    kind = {"both": "subproc", "lean": "lean", "spin": "spin", "hybrid": "hybrid"}.get(vec)
    splits: dict[str, list[dict]] = {"peer": [], "trigger_cold": [], "replay": []}
    if kind is not None:
        splits[f"trigger_cold_{kind}"] = []
    tape = record_tape(4096)

    def part(name: str) -> dict | None:
        if not split:
            return None
        splits[name].append({})
        return splits[name][-1]

    for _ in range(repeats):
        peer.append(bench_peer(n_steps, split=part("peer")))
        ours.append(bench_cold(n_steps, split=part("trigger_cold")))
        replay.append(bench_replay(n_steps, tape, split=part("replay")))
        line = {"peer": round(peer[-1]), "trigger_cold": round(ours[-1]),
                "replay": round(replay[-1]), "ratio": round(ours[-1] / peer[-1], 3)}
        if kind is not None:
            peer_sp.append(bench_peer(n_steps, kind))
            ours_sp.append(bench_cold(n_steps, kind, split=part(f"trigger_cold_{kind}")))
            line.update({f"peer_{kind}": round(peer_sp[-1]),
                         f"trigger_cold_{kind}": round(ours_sp[-1]),
                         "best_vs_best": round(ours_sp[-1] / peer[-1], 3)})
        if split:
            line["split_ms_per_vec_step"] = {k: v[-1] for k, v in splits.items()}
        print(json.dumps(line), flush=True)
    peer_med, ours_med = statistics.median(peer), statistics.median(ours)
    extra = {}
    if kind is not None:
        extra = {f"peer_{kind}_steps_per_s": [round(x) for x in peer_sp],
                 f"trigger_cold_{kind}_steps_per_s": [round(x) for x in ours_sp],
                 f"trigger_cold_{kind}_median": round(statistics.median(ours_sp)),
                 f"peer_{kind}_median": round(statistics.median(peer_sp)),
                 "best_vs_best_of_medians": round(statistics.median(ours_sp) / peer_med, 3)}
    if split:
        extra["split_ms_per_vec_step_median"] = {
            name: {k: round(statistics.median(run[k] for run in runs), 4) for k in runs[0]}
            for name, runs in splits.items()}
    replay_med = statistics.median(replay)
    return {**extra, **step_budget(peer_med, ours_med, replay_med),
            "steps": n_steps,
            "peer_steps_per_s": [round(x) for x in peer],
            "trigger_cold_steps_per_s": [round(x) for x in ours],
            "replay_steps_per_s": [round(x) for x in replay],
            "replay_median": round(replay_med),
            "replay_vs_peer": round(replay_med / peer_med, 3),
            "pair_ratios": [round(o / p, 3) for o, p in zip(ours, peer, strict=True)],
            "peer_median": round(peer_med), "trigger_cold_median": round(ours_med),
            "ratio_of_medians": round(ours_med / peer_med, 3)}


def step_budget(peer_rate: float, ours_rate: float, replay_rate: float,
                goal: float = 0.8) -> dict:
    """Where the time of one env step goes, from the median rates, in milliseconds per env
    step: the learner's own cost with our observations (the replay's whole step: its env
    does next to nothing; the peer's step costs more: its env draws its next state and its
    masked actions with numpy, about 0.016 ms, its masks come as a list and its
    ``Discrete`` observation is one-hot encoded), ours, the env's share (the difference) and
    what the goal leaves the env: ours may take ``peer / goal`` per step, the learner's
    cost included."""
    learner, whole, peer = 1e3 / replay_rate, 1e3 / ours_rate, 1e3 / peer_rate
    return {"learner_ms_per_step": round(learner, 4), "peer_ms_per_step": round(peer, 4),
            "trigger_ms_per_step": round(whole, 4),
            "env_ms_per_step": round(whole - learner, 4),
            "goal_env_ms_per_step": round(peer / goal - learner, 4)}


def bench_train(seed: int, out: Path, bc_episodes: int, timesteps: int) -> dict:
    from mindhelper_env.agents.mindclaw.training import train

    return train("maskable-ppo", timesteps, 2, out, seed=seed, bc_episodes=bc_episodes,
                 eval_freq=10_000, checkpoint_freq=0, progress=False, pool_size=POOL,
                 stop_at_target=True, reward={"reasoning_cost": -0.1})


def bench_suite(suite: str, policy: str | None, workers: int) -> dict:
    from mindhelper_env.evaluation import evaluate

    kwargs = {"learned-trigger": {"trigger": policy}} if policy else {}
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        summary = evaluate(suite, ["mindclaw", "learned-trigger"], tmp, workers=workers,
                           progress=False, plots=False, timing=False, agent_kwargs=kwargs)
        for agent in ("mindclaw", "learned-trigger"):
            calls = []
            with open(Path(tmp) / f"{agent}.jsonl") as fh:
                for line in fh:
                    rec = json.loads(line)
                    calls.append(sum(w["ops"].count("reasoning_run")
                                     for w in rec.get("trace", [])))
            m = summary["metrics"][agent]
            out[agent] = {"PHA": m["PHA"], "PHR": m["PHR"], "PSR": m["PSR"],
                          "reasoning_run_mean": round(float(np.mean(calls)), 4),
                          "reasoning_run_median": float(statistics.median(calls)),
                          "reasoning_run_total": int(sum(calls)), "episodes": len(calls)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="ratio,speed,train,suite")
    ap.add_argument("--ratio-steps", type=int, default=20_480,
                    help="env steps of each learn call in the ratio part")
    ap.add_argument("--vec", choices=("dummy", "both", "lean", "spin", "hybrid"),
                    default="dummy",
                    help="ratio part: also run both sides on SubprocVecEnv ('both'), on a "
                         "lean process vector env, the masks sent with each step ('lean'), "
                         "with all envs in one spin-waiting worker ('spin'), or with the "
                         "first env in the learner's process and the other in that worker, "
                         "stepping at the same time ('hybrid')")
    ap.add_argument("--split", action="store_true",
                    help="ratio part: also time each run's phases (train, env, masks, the "
                         "learner's rollout work) per step of the vector env")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--bc-episodes", type=int, default=500)
    ap.add_argument("--timesteps", type=int, default=200_000)
    ap.add_argument("--suite", default="vh-test-v5")
    ap.add_argument("--policy", default=None, help="an .npz (default: the shipped policy)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="runs/bench-trigger")
    ap.add_argument("--ship", action="store_true")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    report: dict = {}
    if "ratio" in parts:
        report["ratio"] = bench_ratio(args.repeats, args.ratio_steps, args.vec, args.split)
        print(json.dumps(report["ratio"]), flush=True)
    if "speed" in parts:
        envs = [bench_env() for _ in range(args.repeats)]
        ppo = [bench_ppo() for _ in range(args.repeats)]
        report["speed"] = {"env_steps_per_s": [round(x) for x in envs],
                           "env_median": round(statistics.median(envs)),
                           "maskable_ppo_2envs_steps_per_s": [round(x) for x in ppo],
                           "maskable_ppo_median": round(statistics.median(ppo))}
        print(json.dumps(report["speed"]), flush=True)
    if "train" in parts:
        runs = []
        for k in range(args.repeats):
            s = bench_train(k, Path(args.out) / f"seed-{k}", args.bc_episodes, args.timesteps)
            runs.append(s)
            print(json.dumps({"seed": k, "target_seconds": s["target_seconds"],
                              "target_timesteps": s["target_timesteps"], "rule": s["rule"],
                              "best": s["best"], "learn_steps_per_s":
                              s["env_steps_per_second"]}), flush=True)
        secs = [s["target_seconds"] for s in runs if s["target_seconds"] is not None]
        report["train"] = {"reached": f"{len(secs)}/{len(runs)}",
                           "target_seconds": secs,
                           "median_target_seconds": statistics.median(secs) if secs else None}
        print(json.dumps(report["train"]), flush=True)
        if args.ship and runs:
            dest = Path(mindhelper_env.__file__).resolve().parent.parent / "agents" / \
                "mindclaw" / "learned_trigger.npz"
            shutil.copyfile(Path(args.out) / "seed-0" / "policy.npz", dest)
            print(f"shipped {dest}")
    if "suite" in parts:
        report["suite"] = bench_suite(args.suite, args.policy, args.workers)
        print(json.dumps(report["suite"]), flush=True)


if __name__ == "__main__":
    main()
