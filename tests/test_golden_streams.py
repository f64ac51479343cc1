"""Golden hashes of complete observation/info streams.

Speed work on the simulation, the narration and the info candidates must not change what an
agent sees. These tests play the 100 dev-suite episodes (and a few freshly sampled ones) with a
self-contained random agent that reads the info candidates, hash every ``reset`` and ``step``
result (observation, reward, flags, info) as canonical JSON, and compare with hashes computed
before any optimisation. If one fails, the env's behaviour changed: that is a bug unless the
change is deliberate (then bump the env's version history and re-pin here).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.evaluation import make_env

DEV = "vh-dev-v2"
VERBS = ("walk", "open", "close", "grab", "putback", "putin", "give", "tell", "switchon", "sit")


def _plain(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return {"ndarray": hashlib.sha256(x.tobytes()).hexdigest(), "shape": list(x.shape)}
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"unexpected {type(x).__name__} in a stream")


def _canon(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, default=_plain, ensure_ascii=True).encode()


def _random_action(rng: np.random.Generator, info: dict[str, Any]) -> str:
    """Silence most of the time; else 1-3 lines over the candidates, some of them invalid."""
    if rng.random() < 0.7:
        return "none"
    cands = info["candidates"]
    pool = cands["objects"] + cands["locations"] + cands["actors"] + cands["rooms"]
    lines = []
    for _ in range(int(rng.integers(1, 4))):
        verb = VERBS[int(rng.integers(len(VERBS)))]
        if rng.random() < 0.05 or not pool:
            lines.append(f"[{verb}] <nothing> (99999)")
            continue
        a = pool[int(rng.integers(len(pool)))]
        b = pool[int(rng.integers(len(pool)))]
        cls_a = a.get("class", "character")
        cls_b = b.get("class", "character")
        if verb in ("putback", "putin", "give", "tell"):
            lines.append(f"[{verb}] <{cls_a}> ({a['id']}) <{cls_b}> ({b['id']})")
        else:
            lines.append(f"[{verb}] <{cls_a}> ({a['id']})")
    return "; ".join(lines)


def _stream_digest(env: gym.Env, resets: list[dict[str, Any]], seed: int) -> str:
    rng = np.random.default_rng(seed)
    h = hashlib.sha256()
    for kwargs in resets:
        obs, info = env.reset(**kwargs)
        h.update(_canon([obs, info]))
        while True:
            obs, reward, term, trunc, info = env.step(_random_action(rng, info))
            h.update(_canon([obs, reward, term, trunc, info]))
            if term or trunc:
                break
    return h.hexdigest()


# Re-pinned (deliberately) for 0.4.0: interventions are timed by the issue of the first
# acting program (records' actions carry "acts"; rewards and t_I move with it), every episode
# runs to its horizon, and the generator is mh-gen-2.5 (the v2 families and suites; 2.1:
# noticed struggles are helped after NOTICE_DELAY, the watched group crosses putter and mover;
# 2.2: people carry on once their task is over; 2.3: attention and watched set-ups balanced
# further; 2.4: post-cue activity, the watched twin and the search family's earlier step;
# 2.5: a knowing twin's pause after the look, calls before the cue in the attention families).
GOLDEN = {
    "dev-home": "149c0fc545fdf31ab147858eef84c2c44f73b5d815f063982b9da7aaae70f1fb",
    "dev-room": "5c2458d9f7187ea0fe52466aabac2a648566f3b1a1b6221d1dba6400a0592d4f",
    "fresh-home": "cdfc003d03c528c83cd1ebe97e7c005536c94667dd0477c7951f0ba67240cda2",
    "pool-home": "cbd5d63137b203809d741ed3843913f120cc773aedfff57bbeb5bff8e953a229",
}


# MindHelper-VirtualHome-v1 (0.5.0): mh-gen-3.0 episodes (vh-dev-v3; sampled and pooled
# episodes of the twin groups), narration 1 (the robot's own moves narrated as a machine's).
# MindHelper-VirtualHome-v2 (0.6.0): mh-gen-3.1 episodes (vh-dev-v4; sight perception).
# MindHelper-VirtualHome-v3 (0.8.0): mh-gen-3.2 episodes (vh-dev-v5; timings drawn in the
# base, 96 ticks; sampled episodes from the rebuilt bundled pool).
GOLDEN_V1 = {
    "dev-home": "dbba13cf4256ab155456370cf6e4d7f464c44280d31513929a1ba977354af681",
    "fresh-home": "4fc311bcef8332b93de6e9e010c5246470fd9672d95f726b4ecd718c6704362c",
    "pool-home": "d7cb5c8fd09057d2825014ebf47a92c06012fa3b4aac454b509d2346ec35a594",
}
GOLDEN_V2 = {
    "dev-home": "7b8ec5d01891bc17b37d2cc0067b74331cac069fef829de6c6aa3a1cdcc472d8",
    "fresh-home": "b9c14525112a472961cdadae6af5e0a246b6cfa7c829e1f8bacbf764c6c2384b",
    "pool-home": "131b7ae7fdf22185b6f0836cd3dfd0bb5381c7f4d37e1fe3b556562b35e7f758",
}
GOLDEN_V3 = {
    "dev-home": "d68871e56cbd07dd188ac85eb44b2d74f5e3bedf6a285b22006b95b3ab2143e3",
    "fresh-home": "df658ff58a3900153ef4b56cf3381b3747bed07e7f362b8a46f9f62a630f998f",
    "pool-home": "44d308e83048b71271c5231d1cecc398d9282b683589fb87e89d35e3ac23adc6",
}
#: env id -> (its dev suite, its pins)
CURRENT = {"MindHelper-VirtualHome-v1": ("vh-dev-v3", GOLDEN_V1),
           "MindHelper-VirtualHome-v2": ("vh-dev-v4", GOLDEN_V2),
           "MindHelper-VirtualHome-v3": ("vh-dev-v5", GOLDEN_V3)}


@pytest.mark.parametrize("env_id", sorted(CURRENT))
def test_v1_to_v3_dev_suite_streams_are_unchanged(env_id: str) -> None:
    suite, golden = CURRENT[env_id]
    env = make_env(env_id, pool_size=0)
    resets = [{"options": {"suite": suite, "index": i}} for i in range(100)]
    assert _stream_digest(env, resets, seed=7) == golden["dev-home"]


@pytest.mark.parametrize("env_id", sorted(CURRENT))
def test_v1_to_v3_freshly_sampled_streams_are_unchanged(env_id: str) -> None:
    env = make_env(env_id, pool_size=0, window_ticks=2, max_ticks=90)
    resets = [{"seed": 500 + i} for i in range(8)]
    assert _stream_digest(env, resets, seed=11) == CURRENT[env_id][1]["fresh-home"]


@pytest.mark.parametrize("env_id", sorted(CURRENT))
def test_v1_to_v3_pool_streams_are_unchanged(env_id: str) -> None:
    env = make_env(env_id, pool_size=16)
    resets = [{"seed": 3}] + [{} for _ in range(15)]
    assert _stream_digest(env, resets, seed=5) == CURRENT[env_id][1]["pool-home"]


# MindHelper-VirtualHome-v0 keeps its streams: the id still means mh-gen-2.5 and narration 0.
@pytest.mark.parametrize("observability", ["home", "room"])
def test_dev_suite_streams_are_unchanged(observability: str) -> None:
    env = gym.make("MindHelper-VirtualHome-v0", observability=observability, pool_size=0)
    n = 100 if observability == "home" else 30
    resets = [{"options": {"suite": DEV, "index": i}} for i in range(n)]
    assert _stream_digest(env, resets, seed=7) == GOLDEN[f"dev-{observability}"]


def test_freshly_sampled_streams_are_unchanged() -> None:
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0, window_ticks=2, max_ticks=90)
    resets = [{"seed": 500 + i} for i in range(8)]
    assert _stream_digest(env, resets, seed=11) == GOLDEN["fresh-home"]


def test_pool_streams_are_unchanged() -> None:
    # sampled episodes from an episode pool (parsed worlds copied, not rebuilt); the pool
    # lives in the session's temporary cache dir (conftest)
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=16)
    resets = [{"seed": 3}] + [{} for _ in range(15)]
    assert _stream_digest(env, resets, seed=5) == GOLDEN["pool-home"]


def test_events_json_needs_no_character_cleaning() -> None:
    # the env only cuts the events JSON to length: json.dumps escapes every character that
    # clean_text would replace
    from mindhelper_env.render.text import clean_text, cut_text

    s = "".join(chr(i) for i in range(0x3000)) + "\U0001f600"
    text = json.dumps([{"actor_name": s, "args": [{"id": 1, "class": s}], "room": None}])
    assert clean_text(text, 10**9) == text
    assert clean_text(text, 500) == cut_text(text, 500)
