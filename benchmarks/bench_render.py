"""Frames per second of the top-down renderer (``TopDownRenderer``).

Builds a generated house with the robot and three people, then renders frames while the people
walk between pieces of furniture and open/close containers (so the dynamic layer changes every
frame and the object placement cache is exercised the way an episode does), with a new title and
new caption lines on every frame (as in an episode, where every window has its own events).
Reports the median of 5 runs at 256x256 and 512x512, excluding the first (layout-building)
frame, which is timed separately.

Run: ``python benchmarks/bench_render.py [--frames 500] [--seed 0]``.

``--rgb-env`` (or ``--only-rgb-env``) also measures the vision track end to end: env steps/s
of ``MindHelper-VirtualHome-v3`` with ``obs_mode="rgb"`` (three frames a step, drawn by
:class:`~mindhelper_env.render.frames.FrameRenderer`) at 128 and 256 px, with the
``bench_core.py`` policy (80 % silence, 20 % random programs, resets included), beside
Minigrid's ``MiniGrid-DoorKey-8x8-v0`` wrapped in ``RGBImgObsWrapper`` at the same frame
size (``tile_size = size // 8``), random actions, resets included; the two are
interleaved in each of ``--repeats`` runs and the medians and their ratio reported.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from mindhelper_env.render.topdown import TopDownRenderer
from mindhelper_env.world import World, generate_house


def make_world(seed: int) -> tuple[World, dict[int, tuple[str, str]], list[int]]:
    """A generated house with the robot (id 1) and three people (ids 2-4)."""
    world = World(generate_house(np.random.default_rng(seed)))
    rooms = world.rooms
    world.add_character(1, rooms[0], name="robot", robot=True)
    world.add_character(2, rooms[0], name="Alice")
    world.add_character(3, rooms[1 % len(rooms)], name="Ben", reach=1.2)
    world.add_character(4, rooms[2 % len(rooms)], name="Carmen", reach=1.3)
    actors = {2: ("Alice", "adult"), 3: ("Ben", "child"), 4: ("Carmen", "wheelchair")}
    furniture = sorted(n.id for n in world.graph.nodes.values() if n.category == "Furniture")
    return world, actors, furniture


def step_world(world: World, furniture: list[int], i: int) -> None:
    """Move every character to another piece of furniture; toggle a container now and then."""
    for k, cid in enumerate((1, 2, 3, 4)):
        fid = furniture[(i * 7 + k * 11) % len(furniture)]
        node = world.graph.nodes[fid]
        world.execute(cid, f"[walk] <{node.class_name}> ({fid})")
        if "CAN_OPEN" in node.properties and (i + k) % 3 == 0:
            verb = "close" if "OPEN" in node.states else "open"
            world.execute(cid, f"[{verb}] <{node.class_name}> ({fid})")


def bench(size: int, frames: int, seed: int) -> tuple[float, float]:
    """Returns (median frames/s over 5 runs, first-frame milliseconds)."""
    def captions(i: int) -> list[str]:
        return [
            f"t{i} Alice walks to the fridge (112)",
            f"t{i} Alice opens the fridge (112) and looks inside",
            f"t{i + 1} the robot grabs the apple (131)",
            f"t{i + 1} Ben searches the kitchen cabinet (118): nothing there",
        ]

    rates: list[float] = []
    first_ms: list[float] = []
    for run in range(5):
        world, actors, furniture = make_world(seed)
        renderer = TopDownRenderer(size)
        t0 = time.perf_counter()
        renderer.render(world, actors=actors, captions=captions(0), title="tick 0", cache_key=run)
        first_ms.append((time.perf_counter() - t0) * 1000)
        # only rendering is timed, not the world updates
        elapsed = 0.0
        for i in range(frames):
            if i % 4 == 0:
                step_world(world, furniture, i // 4)
            t0 = time.perf_counter()
            renderer.render(world, actors=actors, captions=captions(i), title=f"tick {i}",
                            cache_key=run)
            elapsed += time.perf_counter() - t0
        rates.append(frames / elapsed)
    return statistics.median(rates), statistics.median(first_ms)


def bench_rgb_env(size: int, n_steps: int, env_id: str = "MindHelper-VirtualHome-v3") -> float:
    """Env steps/s in ``obs_mode="rgb"`` at ``size`` px (the bench_core policy)."""
    import warnings

    from bench_core import bench_steps  # this folder is on sys.path when run as a script

    from mindhelper_env.envs.frame_size import LossyFrameWarning

    with warnings.catch_warnings():  # a small size is what is measured
        warnings.simplefilter("ignore", LossyFrameWarning)
        return bench_steps(n_steps, env_id, obs_mode="rgb", frame_size=size)


def bench_minigrid_rgb(size: int, n_steps: int) -> float | None:
    """Minigrid DoorKey-8x8 with ``RGBImgObsWrapper`` (``size`` px), random actions, resets
    included; None without minigrid."""
    from bench_core import bench_minigrid  # this folder is on sys.path when run as a script

    return bench_minigrid(n_steps, rgb_size=size)


def rgb_env_table(sizes: tuple[int, ...], n_steps: int, repeats: int) -> None:
    """Print the rgb-mode env against Minigrid-RGB at each size (medians of ``repeats``)."""
    ours: dict[int, list[float]] = {s: [] for s in sizes}
    grid: dict[int, list[float]] = {s: [] for s in sizes}
    for _ in range(repeats):
        for size in sizes:
            ours[size].append(bench_rgb_env(size, n_steps))
            g = bench_minigrid_rgb(size, n_steps)
            if g is not None:
                grid[size].append(g)
    med = statistics.median
    print(f"\nobs_mode='rgb' env steps/s vs Minigrid DoorKey-8x8 + RGBImgObsWrapper, "
          f"{n_steps} steps x {repeats} runs (median)")
    print(f"{'size':>9} | {'rgb env':>9} | {'Minigrid':>9} | {'ratio':>6} | runs (rgb env; Minigrid)")
    for size in sizes:
        g = med(grid[size]) if grid[size] else float("nan")
        print(f"{size:>4}x{size:<4} | {med(ours[size]):>9.0f} | {g:>9.0f} | "
              f"{med(ours[size]) / g:>6.2f} | "
              + " ".join(f"{x:.0f}" for x in ours[size]) + "; "
              + (" ".join(f"{x:.0f}" for x in grid[size]) or "minigrid not installed"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rgb-env", action="store_true",
                        help="also time obs_mode='rgb' env steps against Minigrid-RGB")
    parser.add_argument("--only-rgb-env", action="store_true",
                        help="time only obs_mode='rgb' env steps against Minigrid-RGB")
    parser.add_argument("--steps", type=int, default=1000, help="env steps per run (rgb env)")
    parser.add_argument("--repeats", type=int, default=5, help="runs (rgb env)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 256],
                        help="frame sizes (rgb env; Minigrid's tile_size is size // 8)")
    args = parser.parse_args()
    if args.only_rgb_env:
        rgb_env_table(tuple(args.sizes), args.steps, args.repeats)
        return
    rows = [(size, *bench(size, args.frames, args.seed)) for size in (256, 512)]
    print(f"top-down renderer, seed {args.seed}, {args.frames} frames x 5 runs (median)")
    print(f"{'size':>9} | {'frames/s':>9} | {'first frame (ms)':>16}")
    print(f"{'-' * 9}-+-{'-' * 9}-+-{'-' * 16}")
    for size, fps, first in rows:
        print(f"{size:>4}x{size:<4} | {fps:>9.0f} | {first:>16.1f}")
    if args.rgb_env:
        rgb_env_table(tuple(args.sizes), args.steps, args.repeats)


if __name__ == "__main__":
    main()
