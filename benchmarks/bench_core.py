"""Speed of the simulation core: env steps/s, resets/s, world script lines/s.

Run: ``python benchmarks/bench_core.py [--repeats 5]``. Reports medians over repeats.

* env steps/s: default ``MindHelper-VirtualHome-v3`` (text observations), a policy that mixes
  silence (80 %) with random-but-valid programs (20 %), resetting when episodes end; and the
  same with ``obs_mode="text+rgb"`` (one 128 px frame per window);
* resets/s: ``reset(seed=i)`` with ``pool_size=0`` (each samples and validates a fresh
  episode), sampled episodes from a warm episode pool (``reset()``; the pool, ``--pool-size``
  entries in the user's cache dir, is filled before timing, which takes a while the first
  time), and replaying a stored spec with ``reset(options={"episode": spec})``;
* env steps/s *including resets* on sampled episodes from the warm pool (the same policy),
  next to Minigrid's ``MiniGrid-DoorKey-8x8-v0`` with random actions (``pip install
  minigrid``; skipped without it), and their ratio;
* ``--obs rgb``: env steps/s with ``obs_mode="rgb"`` (the vision track: a window of three
  frames a step) at the env's default, lossless frame size (528 px for generated houses;
  ``--sizes`` for others; the same policy), next to Minigrid's DoorKey-8x8 with its
  ``RGBImgObsWrapper`` at the same frame size (``tile_size = size // 8``) in the same run,
  and their ratio. Minigrid is not a dependency: ``pip install minigrid`` (it brings
  ``pygame-ce``) for the comparison; without it the Minigrid column says so. ``--obs text``
  (the default) runs the measures above;
* script lines/s: a VirtualHome-sized scene graph (~300 nodes, ~5,000 edges) and a loop of
  realistic lines (walk, open, grab, putin, close, switchon/off, sit/standup).
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.agents.simple import random_program
from mindhelper_env.world import World
from mindhelper_env.world.graph import Node
from mindhelper_env.world.house import add_object, generate_house


def bench_steps(n_steps: int = 4000, env_id: str = "MindHelper-VirtualHome-v3",
                **env_kwargs: object) -> float:
    """Env steps/s of ``env_id`` with a random policy (a program 20 % of the windows), over
    20 episodes generated beforehand (the timing is about stepping, not generation)."""
    env = gym.make(env_id, **env_kwargs)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    # pre-generate episodes so the timing is about stepping, not generation
    specs = []
    for s in range(20):
        env.reset(seed=s)
        specs.append(env.unwrapped.episode_spec)
    obs, info = env.reset(options={"episode": specs[0]})
    k = 1
    t0 = time.perf_counter()
    for _ in range(n_steps):
        action = random_program(rng, info) if rng.random() < 0.2 else "none"
        obs, r, term, trunc, info = env.step(action)
        if term or trunc:
            obs, info = env.reset(options={"episode": specs[k % len(specs)]})
            k += 1
    return n_steps / (time.perf_counter() - t0)


def warm_pool_env(pool_size: int, generator: str | None = None) -> gym.Env:
    """The default env (episodes of ``generator``) with a ``pool_size`` episode pool, filled."""
    env = gym.make("MindHelper-VirtualHome-v3", pool_size=pool_size, generator=generator)
    env.unwrapped.episode_pool.fill()
    return env


def bench_pool_resets(env: gym.Env, n: int = 3000) -> float:
    env.reset(seed=0)
    t0 = time.perf_counter()
    for _ in range(n):
        env.reset()
    return n / (time.perf_counter() - t0)


def bench_pool_steps(env: gym.Env, n_steps: int = 4000) -> float:
    """Steps/s including the resets (sampled episodes from the warm pool)."""
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=1)
    t0 = time.perf_counter()
    for _ in range(n_steps):
        action = random_program(rng, info) if rng.random() < 0.2 else "none"
        obs, r, term, trunc, info = env.step(action)
        if term or trunc:
            obs, info = env.reset()
    return n_steps / (time.perf_counter() - t0)


def bench_minigrid(n_steps: int = 4000, rgb_size: int | None = None) -> float | None:
    """Minigrid DoorKey-8x8 (with ``RGBImgObsWrapper`` at ``rgb_size`` px when given), random
    actions, resets included; None without minigrid."""
    try:
        import minigrid  # noqa: F401  (registers the MiniGrid envs)
        from minigrid.wrappers import RGBImgObsWrapper
    except ImportError:
        return None
    env = gym.make("MiniGrid-DoorKey-8x8-v0")
    if rgb_size is not None:
        env = RGBImgObsWrapper(env, tile_size=rgb_size // 8)
    env.action_space.seed(0)
    env.reset(seed=0)
    t0 = time.perf_counter()
    for _ in range(n_steps):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            env.reset()
    rate = n_steps / (time.perf_counter() - t0)
    env.close()
    return rate


def bench_resets(n: int = 100) -> tuple[float, float]:
    env = gym.make("MindHelper-VirtualHome-v3", pool_size=0)
    t0 = time.perf_counter()
    for i in range(n):
        env.reset(seed=1000 + i)
    fresh = n / (time.perf_counter() - t0)
    spec = env.unwrapped.episode_spec
    t0 = time.perf_counter()
    for _ in range(n):
        env.reset(options={"episode": spec})
    replay = n / (time.perf_counter() - t0)
    return fresh, replay


def vh_sized_graph() -> tuple[dict, int]:
    """A 6-room house filled to ~300 nodes with CLOSE edges like VirtualHome's (~5k edges)."""
    rng = np.random.default_rng(7)
    g = generate_house(rng, n_rooms=6, n_objects_per_room=(6, 7))
    nid = max(g.nodes) + 1
    furn = [n.id for n in g.nodes.values() if n.category == "Furniture"
            and {"SURFACES", "CONTAINERS"} & n.properties]
    classes = ["apple", "mug", "book", "plate", "cellphone", "towel", "magazine", "wallet"]
    while len(g.nodes) < 299:
        add_object(g, nid, classes[nid % len(classes)], furn[nid % len(furn)])
        nid += 1
    g.add_node(Node(1, "character", "Characters", frozenset(), set()))
    rooms = [n.id for n in g.nodes.values() if n.category == "Rooms"]
    g.add_edge(1, "INSIDE", rooms[0])
    by_room: dict[int, list[int]] = {}
    for n in g.nodes.values():
        for t in g.targets(n.id, "INSIDE"):
            if t in rooms:
                by_room.setdefault(t, []).append(n.id)
    for members in by_room.values():
        for i, a in enumerate(members):
            for b in members[i + 1: i + 9]:
                g.add_edge(a, "CLOSE", b)
                g.add_edge(b, "CLOSE", a)
    return g.to_virtualhome(), 1


def bench_lines(n_loops: int = 300) -> tuple[float, int, int]:
    data, cid = vh_sized_graph()
    w = World(data)
    g = w.graph
    containers = [n for n in g.nodes.values() if "CAN_OPEN" in n.properties
                  and "CONTAINERS" in n.properties and (w.height(n.id) or 0) < 1.5]
    objects = [n for n in g.nodes.values() if "GRABBABLE" in n.properties]
    script = []
    for k in range(20):
        c = containers[k % len(containers)]
        o = objects[(k * 7) % len(objects)]
        anchor = w.node(w.anchor(o.id))
        script += [
            f"[walk] <{anchor.class_name}> ({anchor.id})",
            f"[open] <{anchor.class_name}> ({anchor.id})",
            f"[grab] <{o.class_name}> ({o.id})",
            f"[walk] <{c.class_name}> ({c.id})",
            f"[open] <{c.class_name}> ({c.id})",
            f"[putin] <{o.class_name}> ({o.id}) <{c.class_name}> ({c.id})",
            f"[close] <{c.class_name}> ({c.id})",
        ]
    t0 = time.perf_counter()
    n = 0
    for _ in range(n_loops):
        for line in script:
            w.execute(cid, line)
            n += 1
    return n / (time.perf_counter() - t0), len(g.nodes), g.n_edges


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--pool-size", type=int, default=512)
    ap.add_argument("--generator", default=None,
                    help="episodes of this generator (e.g. mh-gen-3.0; default: the current)")
    ap.add_argument("--obs", choices=("text", "rgb"), default="text",
                    help="rgb: time obs_mode='rgb' steps against Minigrid-RGB instead")
    ap.add_argument("--sizes", type=int, nargs="+", default=None,
                    help="with --obs rgb: frame sizes (default: the env's lossless default)")
    ap.add_argument("--steps", type=int, default=1000, help="with --obs rgb: steps per run")
    args = ap.parse_args()
    if args.obs == "rgb":
        import sys
        from pathlib import Path

        from mindhelper_env.envs.frame_size import GENERATED_FRAME_SIZE

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_render import rgb_env_table

        rgb_env_table(tuple(args.sizes or (GENERATED_FRAME_SIZE,)), args.steps, args.repeats)
        return
    steps, rgb_steps, fresh, replay, lines = [], [], [], [], []
    pool_resets, pool_steps, grid_steps = [], [], []
    size = (0, 0)
    t0 = time.perf_counter()
    pool_env = warm_pool_env(args.pool_size, args.generator)
    print(f"episode pool of {args.pool_size} ready in {time.perf_counter() - t0:.1f} s "
          f"({pool_env.unwrapped.episode_pool.directory})")
    for _ in range(args.repeats):
        pool_resets.append(bench_pool_resets(pool_env))
        pool_steps.append(bench_pool_steps(pool_env))
        grid = bench_minigrid()
        if grid is not None:
            grid_steps.append(grid)
        steps.append(bench_steps(generator=args.generator))
        rgb_steps.append(bench_steps(600, obs_mode="text+rgb", frame_size=128))
        f, r = bench_resets()
        fresh.append(f)
        replay.append(r)
        lps, nn, ne = bench_lines()
        lines.append(lps)
        size = (nn, ne)
    med = statistics.median
    print(f"{'measure':40s} {'median':>12s}  runs")
    print(f"{'env steps/s (text obs, default env)':40s} {med(steps):12,.0f}  "
          + " ".join(f"{x:,.0f}" for x in steps))
    print(f"{'env steps/s (text+rgb obs, 128 px)':40s} {med(rgb_steps):12,.0f}  "
          + " ".join(f"{x:,.0f}" for x in rgb_steps))
    print(f"{'resets/s (sample + validate episode)':40s} {med(fresh):12,.1f}  "
          + " ".join(f"{x:,.1f}" for x in fresh))
    print(f"{'resets/s (replay stored spec)':40s} {med(replay):12,.1f}  "
          + " ".join(f"{x:,.1f}" for x in replay))
    print(f"{'resets/s (sampled, warm episode pool)':40s} {med(pool_resets):12,.0f}  "
          + " ".join(f"{x:,.0f}" for x in pool_resets))
    print(f"{'env steps/s incl. resets (warm pool)':40s} {med(pool_steps):12,.0f}  "
          + " ".join(f"{x:,.0f}" for x in pool_steps))
    if grid_steps:
        print(f"{'Minigrid DoorKey-8x8 steps/s (random)':40s} {med(grid_steps):12,.0f}  "
              + " ".join(f"{x:,.0f}" for x in grid_steps))
        print(f"{'ratio MindHelper / DoorKey-8x8':40s} {med(pool_steps) / med(grid_steps):12.2f}")
    else:
        print("Minigrid DoorKey-8x8: skipped (pip install minigrid)")
    label = f"script lines/s (graph {size[0]} nodes, {size[1]} edges)"
    print(f"{label:40s} {med(lines):12,.0f}  "
          + " ".join(f"{x:,.0f}" for x in lines))


if __name__ == "__main__":
    main()
