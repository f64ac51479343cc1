"""``MindHelper-VirtualHome-v3``: the closed loop on the symbolic VirtualHome-style world."""

from __future__ import annotations

import copy
from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from mindhelper_env.backends.symbolic import ROBOT_ID, Simulation
from mindhelper_env.envs.arguments import (  # noqa: F401 (merge_reward: used by envs.trigger)
    _check_backend,
    _check_pool,
    check_families,
    check_frame_args,
    merge_reward,
)
from mindhelper_env.envs.observation import RgbObservation, check_obs_mode, observation_space
from mindhelper_env.envs.observation import make_topdown_renderer as _make_renderer
from mindhelper_env.envs.records import record_info
from mindhelper_env.render.sprites import PICTURE
from mindhelper_env.render.text import (
    CHARSET,
    Labels,
    clean_text,
    cut_text,
    describe_scene,
    narrate_event,
    style_of,
    window_events,
)
from mindhelper_env.scenarios.generator import GENERATORS, generate_episode, sample_episode
from mindhelper_env.scenarios.spec import (
    FAMILIES,
    GENERATOR_VERSION,
    V3_FAMILIES,
    Reference,
    is_v3,
)
from mindhelper_env.world.houses import resolve_houses
from mindhelper_env.world.script import is_silence

__all__ = ["MindHelperEnv", "DEFAULT_REWARD", "NARRATIONS", "NARRATION_VERSION"]

#: Reward terms (see the class docstring); override any of them with ``reward={...}``.
DEFAULT_REWARD: dict[str, float] = {
    "success": 1.0,
    "false_alarm": -1.0,
    "premature": -0.5,
    "late": -0.5,
    "harm": -1.0,
    "line_cost": -0.01,
}

NARRATION_MAX = 16384
#: The narration's wordings: ``0`` (``MindHelper-VirtualHome-v0``) narrates the robot's own
#: moves as a person's ("Robot made their way to ..."), ``1`` (v1) as a machine's ("Robot
#: made its way to ...").
NARRATIONS = (0, 1)
NARRATION_VERSION = 1
EVENTS_MAX = 32768
ACTION_MAX = 4096
MAX_PROGRAM_LINES = 64


class MindHelperEnv(gym.Env):
    """
    ## Description

    A household in which one to three simulated people go about their tasks while a robot
    helper watches. Each ``step`` advances one observation window of ``window_ticks`` ticks and
    returns what happened in it. The robot answers with an executable program of
    VirtualHome-style script lines or ``"none"``. It should intervene only when a false
    belief or an implicit goal blocks the focus person's task — and then quickly and
    helpfully — and stay silent otherwise. Episodes come from {n_families} scenario families
    (:data:`~mindhelper_env.scenarios.spec.V3_FAMILIES`: seven help families and their silent
    twins, built in twin groups from one base draft, plus routine), each validated by
    simulation; ``generator="mh-gen-2.5"`` (``MindHelper-VirtualHome-v0``) draws from the
    {n_families_v2} families of :data:`~mindhelper_env.scenarios.spec.FAMILIES`.

    ## Action Space

    ``Text(max_length=4096, charset=string.printable)``: ``"none"`` (silence) or script lines
    separated by newlines or ``;``, e.g. ``"[walk] <fridge> (132); [open] <fridge> (132)"``.
    An empty (or blank) string is silence too, exactly as ``"none"``: nothing is issued, the
    robot's current program runs on, and no ``action_error`` is reported.
    Verbs: walk, find, open, close, grab, putback, putin, drop, switchon, switchoff, sit,
    standup, give (``[give] <apple> (31) <character> (2)``) and tell
    (``[tell] <character> (2) <apple> (31) <fridge> (12)``). The robot executes one line per
    tick; walking crosses one door per tick. A new program replaces what is left of the
    previous one. A malformed or impossible line never raises: it is skipped and
    ``info["action_error"]`` names it and says why. Movement (walk, find, standup) is free:
    the robot's *intervention* is the issue of its first program that contains a line acting
    on an object or a person (open, grab, put, give, tell, switch, drop, ...), executed or
    not, at the tick it was issued; a later program does not undo it.

    ## Observation Space

    ``Dict`` with ``"narration"`` (``Text``: natural-language account of the window, as the
    robot perceives it), ``"events"`` (``Text``: the same events as a JSON list of
    ``{tick, actor, actor_name, verb, args: [{id, class}], room}``, plus ``contents`` for
    ``open``) and ``"tick"`` (``Discrete``: the tick at the end of the window). With
    ``observability="home"`` the robot sees every room (not inside closed containers); with
    ``"room"`` only its own room. Narration and events describe behaviour only, as a camera
    shows it (docs/narration.md): never intentions, what someone looks for, or why an attempt
    failed. People's visible struggles are the events ``look`` (looked over a place and took
    nothing), ``stretch`` (stretched toward something out of reach) and ``stand`` (stood at a
    closed container, hands full); a line that fails leaves no event.

    ## Rewards

    In the step whose program is the intervention (the first one containing an acting line):
    ``false_alarm`` if the episode needs none, ``premature``/``late`` if it was issued before
    onset/after the deadline (``deadline = onset + 5`` ticks); each step, ``line_cost`` per
    robot script line attempted. At the end of the episode (the horizon, or ``max_ticks``),
    and only then: ``success`` if the episode needed help, the robot intervened and the focus
    person's task succeeded, and ``harm`` if the robot made the focus person fail or left
    them with a false belief. The person's success is thus scored at the end only, never
    signalled earlier by a reward, a flag or an episode that stops. Defaults in
    :data:`DEFAULT_REWARD`.

    ## Episode End

    Every episode runs to the spec's ``horizon`` (ticks) whatever happens: ``terminated`` is
    true exactly when the tick reaches the horizon, in every episode, so the length of an
    episode says nothing about its outcome. People who finished their activities (or gave
    up) stay idle while others carry on; nothing in ``obs`` or ``info`` reveals whether the
    focus person succeeded before the end. ``truncated`` is true when ``max_ticks`` is
    below the horizon and is reached first. The final ``info``
    carries ``"episode_record"``: the robot's actions with ticks, executed lines, whether the
    focus person succeeded, harm, and the reference (ground truth) — with the reference's
    null fields (``window`` and ``target_object`` of an episode that needs no help) left
    out — and ``"episode_record_json"``, the complete record (:meth:`episode_record`) as a
    JSON string. The env registers no ``max_episode_steps``: limit episodes with
    ``max_ticks``. An outer ``TimeLimit`` cannot tell the env; put
    :class:`~mindhelper_env.envs.CompleteEpisodeRecord` (or ``PrecisionInterventionMetrics``)
    outside it to get the record, marked ``truncated``, in the final ``info``.

    ## Vector envs

    Gymnasium's vector envs stack each ``info`` key into an array typed by its first value,
    and recurse into dicts. So no number, bool or dict in ``info`` is ever ``None`` (``-1``
    for "no tick"; a reference field that would be ``None`` is left out); only values
    stacked as object arrays anyway (strings such as ``action_error``, lists such as
    ``candidates``) may be ``None``. Hence
    ``gym.make_vec(..., vectorization_mode="sync" | "async")`` stacks infos in every
    autoreset mode (async: ``vector_kwargs={"shared_memory": False}``, as the observation is
    text). ``reset(options={"suite": s, "indices": [i0, i1, ...]})`` gives the sub-env whose
    ``vector_index`` is ``k`` episode ``indices[k]``;
    :func:`~mindhelper_env.envs.make_vec_env` builds vector envs with ranks set.
    ``options={"suite": s, "index": i}`` means episode ``i`` in every sub-env.

    ## Arguments

    * ``families``: family names (list) or ``{family: weight}`` to sample from (default: all
      {n_families}, weighted so that half the episodes need help:
      :func:`~mindhelper_env.scenarios.spec.family_weights`).
    * ``window_ticks`` (3): ticks per observation window. Help issued at any tick from onset
      to the deadline (onset + 5) is validated to work; windows longer than 5 ticks may make
      even the oracle late.
    * ``observability`` (``"home"``): ``"home"`` or ``"room"``.
    * ``max_ticks`` (150): cap on episode length in ticks; episodes end at their horizon
      (``terminated``) or here if it comes first (``truncated``).
    * ``reward``: overrides of :data:`DEFAULT_REWARD`.
    * ``render_mode``: ``"ansi"`` or ``"rgb_array"`` (a top-down floor plan, ``render_size``
      pixels square, 256 by default).
    * ``obs_mode`` (``"text"``): ``"text+rgb"`` adds ``"rgb"`` to the observation: the last
      frame of the window (``uint8``, ``frame_size`` × ``frame_size`` × 3), or the last
      ``frame_stack`` frames (``frame_stack`` × H × W × 3) when ``frame_stack > 1``.
      With ``observability="room"`` the frame shows only the robot's room (the rest greyed
      out, no people or objects drawn there). Needs the ``video`` extra (Pillow). ``"rgb"``
      (the vision track, docs/vision.md): ``obs`` is only the window's frames, a ``Box``
      ``(window_ticks, S, S, 3)`` uint8, and ``info`` only ids and classes (NumPy only).
    * ``frame_size``: with ``"rgb"`` by default the largest canvas of the houses the env can
      play (lossless: 528 for generated houses, 716 for ``house="tdw"``;
      :mod:`~mindhelper_env.envs.frame_size`), else 128. ``picture`` (6): the ``rgb``
      picture; 5 draws 0.8.0's frames byte for byte.

    * ``pool_size`` (4096): sampled episodes (``reset()`` without options) are entry
      ``np_random.integers(pool_size)`` of a pool of validated episodes cached on disk
      (:mod:`mindhelper_env.scenarios.pool`; same seed, same episodes, warm or cold); ``0``
      generates and validates a fresh episode at every reset (~10 ms).
    * ``house``: where sampled episodes are set (suite episodes carry their own house):
      ``None`` (procedurally generated houses, 3–6 rooms), a path to a VirtualHome
      environment graph JSON file (a real apartment; e.g. one from a VirtualHome executable
      or the TrimmedTestScene1 graphs of ``virtualhome-eval``), a graph dict, a list of those
      (one house each), ``"virtualhome:scene1"`` (VirtualHome's TestScene1 apartment, needs
      ``virtualhome-eval``) or ``"tdw"`` (TDW's floorplan houses, needs the ``tdw`` extra).
      People, task objects and distractors are placed in the house's own rooms, containers
      and surfaces (:mod:`mindhelper_env.world.houses`).
    * ``pool_dir``: the pool's cache directory (default ``$MINDHELPER_CACHE_DIR``, else
      ``$XDG_CACHE_HOME/mindhelper-env`` or ``~/.cache/mindhelper-env``).

    * ``backend`` (``"symbolic"``): ``"virtualhome-unity"`` also replays every tick in a
      running VirtualHome Unity executable
      (:mod:`mindhelper_env.backends.virtualhome_unity`). The symbolic simulation stays the
      source of truth for observations' text, rewards and metrics; Unity supplies
      ``obs["rgb"]`` (with ``obs_mode="text+rgb"``: the robot's camera, ``frame_size``
      square; ``render()`` still draws the top-down plan) and ``info["unity"]``: counters
      ``lines_sent``, ``lines_skipped``, ``lines_substituted``, ``script_failures``,
      ``resyncs``, ``mismatches`` (Unity's graph disagreeing with the symbolic state about
      where an object is, summed over checks), ``mismatched_now``, ``graph_checks``,
      ``frames`` and ``unplaced`` (all ints). The simulator is
      contacted at ``reset()``; if it cannot be reached, or fails mid-episode, ``reset``/``step``
      raise ``SimulatorUnavailable`` (a ``ConnectionError``) or ``UnityError``.
      ``"tdw"`` mirrors every tick in a TDW build you start yourself (episodes must be set in
      TDW houses: ``MindHelper-TDW-v3`` or a ``tdw-*`` suite;
      :mod:`mindhelper_env.backends.tdw_build`): the floorplan scene, the furniture by model
      name as the layout placed it, the everyday objects, one Replicant per person (a
      wheelchair Replicant for wheelchair users) and the robot, teleported tick by tick; an
      overhead camera supplies ``obs["rgb"]``; ``info["tdw"]`` counts ``commands_sent``,
      ``frames``, ``missing_frames`` and ``episodes``. No build on the port within the timeout
      raises ``SimulatorUnavailable`` at ``reset()``.
    * ``backend_options``: for ``"tdw"``: ``port`` (1071), ``timeout`` (seconds to wait for
      the build at the first reset, 10). For ``"virtualhome-unity"``: ``url`` (``http://127.0.0.1:8080``),
      ``timeout`` (seconds per request, 30), ``environment`` (apartment, 0),
      ``camera`` (a camera index or the name of the robot's character camera,
      ``"PERSON_FROM_BACK"``), ``check_graph`` (True), ``characters`` (prefabs, robot first),
      ``skip_animation`` (True).

    * ``generator``: the generator of sampled episodes (default
      :data:`~mindhelper_env.scenarios.spec.GENERATOR_VERSION`, ``mh-gen-3.2``: twin groups
      built from one base draft, sight perception, every timing the switch does not need
      drawn in the base, 96-tick episodes; ``"mh-gen-3.1"``: the same groups with their
      timings drawn per side (84 ticks), as ``MindHelper-VirtualHome-v2`` registers;
      ``"mh-gen-3.0"``: attention perception, as ``MindHelper-VirtualHome-v1`` registers; ``"mh-gen-2.5"``:
      the v2 families, as ``MindHelper-VirtualHome-v0`` registers). Suite episodes carry
      their own.
    * ``narration`` (1): the wording (:data:`NARRATIONS`); ``0`` narrates the robot's own
      moves as a person's, as ``MindHelper-VirtualHome-v0`` registers.

    ``reset(options={"episode": spec})`` replays an episode spec exactly;
    ``reset(options={"family": name})`` samples one family (freshly generated).
    ``env.unwrapped.ground_truth`` is the episode's :class:`~mindhelper_env.scenarios.Reference`.

    ## Version History

    * v3 (0.8.0): sampled episodes from ``mh-gen-3.2``: every timing the mind switch does
      not need is drawn in the base and shared by both sides of a twin group; 96-tick
      episodes (the suites ``*-v5``). ``MindHelper-VirtualHome-v2`` stays registered with
      ``generator="mh-gen-3.1"``.
    * v2 (0.6.0): sampled episodes from ``mh-gen-3.1``: sight perception (a chore done
      facing away blinds like a call; a person sees objects taken and put next door
      through an open door; the reset narration and ``info["doors"]`` say which doors are
      open; the suites ``*-v4``). ``MindHelper-VirtualHome-v1`` stays registered with
      ``generator="mh-gen-3.0"``.
    * v1 (0.5.0): sampled episodes from ``mh-gen-3.0`` (twin groups from one base draft;
      presence is not perception: a person on the phone perceives nothing of others'
      events; 84-tick episodes; the suites ``*-v3``), the robot's own moves narrated as a
      machine's (``narration=1``: "made its way"). ``MindHelper-VirtualHome-v0`` stays
      registered as it was: ``mh-gen-2.5`` and ``narration=0``.
    * v0 (0.4.0, unreleased): the intervention is the issue of the first program containing
      an acting line, executed or not (record: ``actions[i]["acts"]``,
      ``intervention_tick``); a ``walk``-prefixed act can no longer be scored as help in one
      episode and as silence in another. Every episode runs to its horizon: ``terminated``
      exactly when the tick reaches it (before, it ended when the focus person succeeded or
      gave up, so silent episodes ended soon after the struggle and the length told the
      label); ``truncated`` only at a ``max_ticks`` below the horizon.
    * v0 (0.3.0): ``house=`` sets sampled episodes in real houses (VirtualHome graphs,
      TDW floorplans; episodes in generated houses unchanged); ``backend=`` mirrors episodes
      in a VirtualHome Unity executable or a TDW build. Vector-safe ``info`` (no number, bool or dict is ever
      ``None``; ``episode_record`` without null reference fields plus
      ``episode_record_json``); ``options={"suite", "indices"}`` with ``vector_index``;
      sampled episodes from an on-disk pool of validated episodes (``pool_size``,
      ``pool_dir``; episodes per seed differ from 0.2.0; suites unchanged); faster resets
      (parsed worlds are copied, not rebuilt from JSON).
    * v0 (0.2.0): scenarios v1 — behaviour-only narration and events, twelve families with
      silent twins, deadline = onset + 5 ticks, shuffled ids, movement is not an
      intervention. Suites ``vh-dev-v2``/``vh-test-v2``; the leaky v0 suites are withdrawn.
    * v0 (0.1.0): initial release.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    #: Rank of this env in a vector env (``options={"suite": s, "indices": [...]}`` picks
    #: ``indices[vector_index]``); set by :func:`mindhelper_env.envs.make_vec_env`.
    vector_index: int | None = None
    _pool: Any = None
    _pool_entry: Any = None
    _pool_world: Any = None
    _lists: Any = None
    _candidates: Any = None
    _tick_table: Any = None

    def __init__(
        self,
        render_mode: str | None = None,
        families: list[str] | tuple[str, ...] | dict[str, float] | None = None,
        window_ticks: int = 3,
        observability: str = "home",
        max_ticks: int = 150,
        reward: dict[str, float] | None = None,
        obs_mode: str = "text",
        frame_size: int | None = None,
        frame_stack: int = 1,
        render_size: int = 256,
        pool_size: int | None = None,
        pool_dir: str | None = None,
        house: Any = None,
        backend: str = "symbolic",
        backend_options: dict[str, Any] | None = None,
        generator: str | None = None,
        narration: int = NARRATION_VERSION,
        picture: int = PICTURE,
    ) -> None:
        if generator is not None and generator not in GENERATORS:
            raise ValueError(f"generator must be one of {list(GENERATORS)}, got {generator!r}")
        if isinstance(narration, bool) or narration not in NARRATIONS:
            raise ValueError(f"narration must be one of {list(NARRATIONS)}, got {narration!r}")
        #: the wording of the narration (:data:`NARRATIONS`)
        self.narration = int(narration)
        #: the generator of sampled episodes (:data:`GENERATORS`; None: the current default,
        #: ``mh-gen-3.2``)
        self.generator = GENERATOR_VERSION if generator is None else generator
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        self.render_mode = render_mode
        self.families = check_families(families, self.generator)
        if isinstance(window_ticks, bool) or not isinstance(window_ticks, (int, np.integer)) \
                or window_ticks < 1:
            raise ValueError(f"window_ticks must be a positive int, got {window_ticks!r}")
        self.window_ticks = int(window_ticks)
        if observability not in ("home", "room"):
            raise ValueError(f"observability must be 'home' or 'room', got {observability!r}")
        self.observability = observability
        if isinstance(max_ticks, bool) or not isinstance(max_ticks, (int, np.integer)) \
                or max_ticks < 1:
            raise ValueError(f"max_ticks must be a positive int, got {max_ticks!r}")
        self.max_ticks = int(max_ticks)
        self.reward_config = merge_reward(reward, DEFAULT_REWARD)
        self.obs_mode = check_obs_mode(obs_mode)
        #: the real houses sampled episodes are set in (None: generated houses)
        self.houses = resolve_houses(house)
        #: the picture of ``rgb`` frames (:data:`~mindhelper_env.render.sprites.PICTURES`)
        frame_size, self.picture = check_frame_args(frame_size, render_size, obs_mode,
                                                    self.houses, picture)
        if isinstance(frame_stack, bool) or not isinstance(frame_stack, (int, np.integer)) \
                or not 1 <= frame_stack <= 16:
            raise ValueError(f"frame_stack must be an int between 1 and 16, got {frame_stack!r}")
        self.frame_size = int(frame_size)
        self.frame_stack = int(frame_stack)
        self.render_size = int(render_size)
        self.action_space = spaces.Text(max_length=ACTION_MAX, min_length=0,
                                        charset="".join(sorted(CHARSET)))
        self.observation_space = observation_space(
            obs_mode, max_ticks=self.max_ticks, frame_size=self.frame_size,
            frame_stack=self.frame_stack, window_ticks=self.window_ticks,
            narration_max=NARRATION_MAX, events_max=EVENTS_MAX)
        #: the ``obs_mode="rgb"`` observation builder (None in the text modes)
        self.vision = RgbObservation(self.frame_size, self.window_ticks, self.picture) \
            if obs_mode == "rgb" else None
        #: optional ``callback(simulation, events)`` run after every tick (used by recorders
        #: such as ``mindhelper render``; not part of the observation)
        self.on_tick: Any = None
        self._frames: deque[np.ndarray] = deque(maxlen=self.frame_stack)
        self._frame_renderer: Any = None
        self._episode_counter = 0
        self._sim: Simulation | None = None
        self._spec: dict[str, Any] | None = None
        self._ref: Reference | None = None
        self._done = True
        self._window = 0
        self._names: dict[int, str] = {}
        self._labels: Labels | None = None
        self._kinds: dict[int, str] = {}
        self._style = 0
        self._intervened = False
        self._last_text = ""
        #: True for an owner that reads no narration, renders nothing, changes nothing in
        #: ``obs`` and ``info`` and shows them to nobody (the Trigger env with a symbolic
        #: agent, :mod:`mindhelper_env.envs.trigger`): resets and windows with events leave
        #: ``obs["narration"]`` empty, ``obs["events"]`` is the list of event dicts the JSON
        #: text would decode to (``info["events"]`` itself), and ``info["candidates"]`` lists
        #: the env's own dicts instead of copies.
        self._quiet = False
        self._renderer: Any = None
        self._pool_config = _check_pool(pool_size, pool_dir)
        if self.houses is not None:
            self.houses.check_families(f for f, w in self.families.items() if w > 0)
        self.backend = backend
        self._backend_options = _check_backend(backend, backend_options)
        if self._backend_options is not None and obs_mode == "text+rgb" \
                and "camera" in self._backend_options and self._backend_options["camera"] is None:
            raise ValueError("obs_mode='text+rgb' with the Unity backend needs a camera "
                             "(backend_options camera must not be None)")
        self._mirror: Any = None

    # ------------------------------------------------------------------ properties
    @property
    def ground_truth(self) -> Reference:
        """The current episode's reference (for the oracle and metric wrappers only)."""
        if self._ref is None:
            raise gym.error.ResetNeeded("call reset() before reading ground_truth")
        return self._ref

    @property
    def episode_spec(self) -> dict[str, Any]:
        """A deep copy of the current episode's spec (replay with options={'episode': spec})."""
        if self._spec is None:
            raise gym.error.ResetNeeded("call reset() first")
        if "graph" not in self._spec and self._pool_entry is not None:
            return self._pool.spec(self._pool_entry.index)  # a pool episode: a fresh copy
        return copy.deepcopy(self._spec)

    @property
    def character_names(self) -> dict[int, str]:
        """Display names of the characters by node id (the robot is "Robot")."""
        return dict(self._names)

    @property
    def simulation(self) -> Simulation:
        if self._sim is None:
            raise gym.error.ResetNeeded("call reset() first")
        return self._sim

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = self._vector_options(dict(options or {}))
        self._pool_entry = self._pool_world = None
        spec = self._episode_from_options(options)
        sim = Simulation(spec, world=self._pool_world)
        self._pool_world = None
        try:
            ref = Reference.from_dict(spec["reference"])
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"episode spec has no valid 'reference' ({err!r})") from None
        self._spec = spec
        self._ref = ref
        self._sim = sim
        self._names = {a.id: a.name for a in sim.actors}
        self._names[ROBOT_ID] = "Robot"
        self._kinds = {a.id: a.kind for a in sim.actors}
        self._labels = Labels(sim.world, self._names,
                              ROBOT_ID if self.narration >= 1 else None)
        if self._backend_options is not None:
            self._done = True  # until Unity mirrors the new episode
            self._mirror_reset(sim)
        self._style = style_of(spec.get("seed", spec.get("episode_id", "")))
        self._intervened = False
        self._done = False
        self._window = 0
        # a pool episode's reset narration depends on its initial state alone: described
        # once per entry (with every room in view; "room" observability depends on where
        # the robot starts and is described each time)
        memo = self._pool_entry.memo if self._pool_entry is not None \
            and self.observability == "home" else None
        text = memo.get("reset_narration") if memo is not None else None
        if self._quiet or self.vision is not None:
            text = ""
        elif text is None:
            text = clean_text(describe_scene(sim.world, self._visible_rooms(), self._names,
                                             ROBOT_ID, self._kinds, self._labels,
                                             doors=sim.perception == "sight"),
                              NARRATION_MAX)
            if memo is not None:
                memo["reset_narration"] = text
        self._last_text = text
        self._last_events: list[Any] = []
        self._episode_counter += 1
        obs = {"narration": text, "events": "[]", "tick": np.int64(sim.tick)}
        if self.vision is not None:
            return self.vision.reset(self, sim), self.vision.info(self, sim, None)
        if self.obs_mode == "text+rgb":
            first = self._frame([])
            self._frames.clear()
            self._frames.extend(first for _ in range(self.frame_stack))
            obs["rgb"] = self._stacked()
        info = self._info(action_error=None, events=[])
        if self._mirror is not None:
            info[self._mirror_key] = self._mirror.info()
        return obs, info

    def _episode_from_options(self, options: dict[str, Any]) -> dict[str, Any]:
        if "index" in options and "suite" not in options:
            raise ValueError("options['index'] needs options['suite'] (the suite to replay)")
        if "episode" in options:
            ep = options["episode"]
            if isinstance(ep, dict) and ("graph" in ep or "actors" in ep):
                return ep  # never modified by the env; episode_spec hands out copies
            if isinstance(ep, dict) and "suite" in ep:
                return self._suite_episode(ep["suite"], ep.get("index"))
            raise ValueError("options['episode'] must be an episode spec dict (with 'graph') "
                             "or {'suite': name, 'index': i}")
        if "suite" in options:
            return self._suite_episode(options["suite"], options.get("index"))
        if "family" in options:
            fam = options["family"]
            known = V3_FAMILIES if is_v3(self.generator) else FAMILIES
            if not isinstance(fam, str) or fam not in known:
                raise ValueError(f"unknown family {fam!r}; expected one of {list(known)}")
            return generate_episode(fam, int(self.np_random.integers(0, 2**31 - 1)),
                                    house=self.houses, generator=self.generator)
        return self._sample_spec()

    def _sample_spec(self) -> dict[str, Any]:
        """A sampled training episode: from the episode pool, or freshly generated."""
        size, directory = self._pool_config
        if size == 0:
            return sample_episode(self.np_random, self.families, house=self.houses,
                                  generator=self.generator)
        if self._pool is None:
            from mindhelper_env.scenarios.pool import get_pool

            self._pool = get_pool(self.families, size, directory, house=self.houses,
                                  generator=self.generator)
        self._pool_entry = self._pool.sample(self.np_random)
        # the last episode is over (reset cannot fail from here): free its world before
        # unpickling the next, so the garbage collector sees one world's objects, not two
        self._sim = self._lists = self._candidates = self._labels = None
        spec, self._pool_world = self._pool_entry.load()
        return spec  # without "graph" (episode_spec fetches the complete spec)

    @property
    def episode_pool(self) -> Any:
        """The :class:`~mindhelper_env.scenarios.pool.EpisodePool` sampled episodes come from
        (``None`` with ``pool_size=0``); e.g. ``env.unwrapped.episode_pool.fill()`` warms it."""
        size, directory = self._pool_config
        if size and self._pool is None:
            from mindhelper_env.scenarios.pool import get_pool

            self._pool = get_pool(self.families, size, directory, house=self.houses,
                                  generator=self.generator)
        return self._pool

    def _vector_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """``{"suite": s, "indices": [...]}``: this sub-env takes ``indices[vector_index]``."""
        if "indices" not in options:
            return options
        indices = options.pop("indices")
        if "index" in options:
            raise ValueError("pass either options['index'] or options['indices'], not both")
        if isinstance(indices, (str, bytes)) or not hasattr(indices, "__len__"):
            raise ValueError(f"options['indices'] must be a list of ints, got {indices!r}")
        rank = self.vector_index
        if rank is None:
            if len(indices) != 1:
                raise ValueError(
                    "options['indices'] needs the env's vector_index (set by "
                    "mindhelper_env.envs.make_vec_env, or env.unwrapped.vector_index = k)")
            rank = 0
        if not 0 <= rank < len(indices):
            raise ValueError(f"options['indices'] has {len(indices)} entries; this env has "
                             f"vector_index {rank}")
        options["index"] = indices[rank]
        return options

    def _suite_episode(self, suite: str, index: Any) -> dict[str, Any]:
        from mindhelper_env.scenarios.suites import require_suite, suite_episode

        require_suite(suite)  # unknown, withdrawn (naming its replacement) or out of date
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise ValueError(f"suite episode index must be an int, got {index!r}")
        return suite_episode(suite, int(index))

    def step(self, action: Any):
        if self._sim is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        if self._done:
            raise gym.error.ResetNeeded("episode is over; call reset() before step()")
        sim = self._sim
        if isinstance(action, bytes):
            action = action.decode("utf-8", "replace")
        if not isinstance(action, str):
            raise TypeError(f"action must be a string ('none' or script lines), got {type(action).__name__}")
        reward = 0.0
        errors: list[str] = []
        if not is_silence(action) and action.strip():  # "" (or blank) is silence, as "none"
            raw = action[:ACTION_MAX]
            if len(action) > ACTION_MAX:
                errors.append(f"action longer than {ACTION_MAX} characters; the rest was ignored")
            bad = sim.issue(raw, max_lines=MAX_PROGRAM_LINES)
            if sim.program_cut:
                errors.append(f"program longer than {MAX_PROGRAM_LINES} lines; the rest was ignored")
            errors.extend(f"line '{line}': {why}" for line, why in bad[:8])
            if len(bad) > 8:
                errors.append(f"... and {len(bad) - 8} more malformed lines")
        n_lines_before = len(sim.robot_lines)
        events = []
        rgb = self.obs_mode == "text+rgb"
        for k in range(self.window_ticks):
            tick_events = sim.step_tick()
            events.extend(tick_events)
            if self._mirror is not None:
                self._mirror.step(sim, tick_events)
            if self.on_tick is not None:
                self.on_tick(sim, self._visible_events(tick_events))
            if self.vision is not None:
                self.vision.tick(self, sim, tick_events, self._visible_events(tick_events))
            done, cut = sim.episode_flags(self.max_ticks)
            ended = done or cut
            if rgb and (k >= self.window_ticks - self.frame_stack or ended):
                self._frames.append(self._frame(self._visible_events(tick_events)))
            if ended:
                break
        new_lines = sim.robot_lines[n_lines_before:]
        reward += self.reward_config["line_cost"] * len(new_lines)
        if not self._intervened and sim.intervention_tick is not None:
            self._intervened = True
            reward += self._first_action_reward(sim.intervention_tick)
        for ln in new_lines:
            if not ln.ok:
                errors.append(f"line '{ln.line}' at tick {ln.tick}: {ln.reason}")
        self._window += 1
        terminated, truncated = sim.episode_flags(self.max_ticks)
        if self.vision is not None:
            self._last_events = self._visible_events(events)
            return self.vision.step(self, errors, float(reward), terminated, truncated)
        visible = self._visible_events(events)
        if visible:
            lines, ev_dicts, events_text = window_events(sim.world, visible, self._names,
                                                         self._style, self._labels,
                                                         not self._quiet, not self._quiet)
            text = clean_text("\n".join(lines), NARRATION_MAX)  # "" without narration
            # json.dumps text (escapes all but printable ASCII): only the length cut applies
            events_text = ev_dicts if self._quiet else cut_text(events_text, EVENTS_MAX)
        else:
            text, ev_dicts, events_text = "Nothing happened that you could see.", [], "[]"
        self._last_text = text
        self._last_events = visible
        obs = {
            "narration": text,
            "events": events_text,
            "tick": self._tick_value(sim.tick),
        }
        if rgb:
            obs["rgb"] = self._stacked()
        info = self._info(action_error="; ".join(errors) if errors else None, events=ev_dicts)
        if self._mirror is not None:
            info[self._mirror_key] = self._mirror.info()
        if terminated or truncated:
            self._done = True
            reward += self._final_reward()
            info.update(record_info(self.episode_record()))
        return obs, float(reward), bool(terminated), bool(truncated), info

    # ------------------------------------------------------------------ helpers
    def _tick_value(self, tick: int) -> np.int64:
        """``np.int64(min(tick, max_ticks))``, from a table of the (immutable) scalars."""
        table = self._tick_table
        if table is None or len(table) != self.max_ticks + 1:
            table = self._tick_table = tuple(np.int64(t) for t in range(self.max_ticks + 1))
        return table[min(tick, self.max_ticks)]

    def _visible_rooms(self) -> list[int]:
        sim = self._sim
        assert sim is not None
        if self.observability == "home":
            return list(sim.world.rooms)
        r = sim.world.chars[ROBOT_ID].room
        return [r] if r is not None else []

    def _visible_events(self, events: list[Any]) -> list[Any]:
        if self.observability == "home":
            return events
        sim = self._sim
        assert sim is not None
        room = sim.world.chars[ROBOT_ID].room
        return [e for e in events if e.room == room or e.actor == ROBOT_ID]

    def _first_action_reward(self, tick: int) -> float:
        ref = self._ref
        assert ref is not None
        if not ref.needs_intervention:
            return self.reward_config["false_alarm"]
        if ref.window is not None:
            if tick < ref.window["onset_tick"]:
                return self.reward_config["premature"]
            if tick > ref.window["deadline_tick"]:
                return self.reward_config["late"]
        return 0.0

    def _final_reward(self) -> float:
        sim, ref = self._sim, self._ref
        assert sim is not None and ref is not None
        r = 0.0
        if ref.needs_intervention and sim.intervened and sim.focus_succeeded():
            r += self.reward_config["success"]
        if sim.harm():
            r += self.reward_config["harm"]
        return r

    def _info(self, *, action_error: str | None, events: list[dict[str, Any]]) -> dict[str, Any]:
        sim = self._sim
        assert sim is not None
        w = sim.world
        chars = w.chars
        if self.observability == "home":  # self._visible_rooms(), without the copy
            rooms = w.rooms
        else:
            r = chars[ROBOT_ID].room
            rooms = [r] if r is not None else []
        grabbable, furniture, room_list = self._node_lists(sim)
        # objects change only with the world's version, locations (furniture never moves)
        # with its states, and both with the rooms seen
        cached = self._candidates
        if cached is None or cached[0] is not w or cached[1] != rooms:
            room_set = set(rooms)
            nodes = w.graph.nodes
            locations = [{"id": nid, "class": cls, "room": r,
                          "open": "OPEN" in nodes[nid].states if can_open else None}
                         for nid, cls, can_open, r in furniture if r in room_set]
            openable = [(d["id"], d) for d in locations if d["open"] is not None]
            cached = self._candidates = [w, list(rooms), -1, None, w.states_version, locations,
                                         room_set, [{"id": r, "class": cls} for r, cls in room_list],
                                         openable]
        room_set = cached[6]
        if cached[2] != w.version:
            cached[3] = [{"id": nid, "class": cls, "location": loc, "room": r}
                         for nid, cls, loc, r in w.objects_in_with(grabbable, room_set)]
            cached[2] = w.version
        if cached[4] != w.states_version:  # only "open" can change (furniture never moves)
            nodes = w.graph.nodes
            for nid, d in cached[8]:
                d["open"] = "OPEN" in nodes[nid].states
            cached[4] = w.states_version
        actors = []
        for a in sim.actors:
            room = chars[a.id].room
            if room in room_set:
                actors.append({"id": a.id, "name": a.name, "kind": a.kind, "room": room,
                               "holding": w.held_by(a.id)})
        # info gets copies (its dicts are the caller's to change)
        objects, locations, rooms_ = (cached[k] if self._quiet else list(map(dict.copy, cached[k]))
                                      for k in (3, 5, 7))
        info = {
            "tick": sim.tick,
            "window": self._window,
            "pending_program": [str(x) for x in sim.pending],
            "action_error": action_error,
            "events": events,
            "candidates": {
                "actors": actors,
                "objects": objects,  # sorted by id
                "locations": locations,  # sorted by id
                "rooms": rooms_,
            },
            "robot": {"id": ROBOT_ID, "room": chars[ROBOT_ID].room,
                      "holding": w.held_by(ROBOT_ID)},
        }
        if sim.perception != "room":
            # how the people perceive, where it is not the room rule of mh-gen-2.x episodes
            # (whose streams stay as they were): a public rule of the episode, like its house
            info["perception"] = sim.perception
            if sim.perception == "sight":
                # what one sees through from the next room: the doors and which are open
                info["doors"] = [{"id": did, "rooms": list(rooms), "open": "CLOSED" not in
                                  w.graph.nodes[did].states}
                                 for did, rooms in sorted(w.doors.items())]
        return info

    def _node_lists(self, sim: Simulation) -> tuple[dict[int, str],
                                                     list[tuple[int, str, bool, int | None]],
                                                     list[tuple[int, str]]]:
        """Per episode (nodes are never added or removed, furniture never moves): ``{id:
        class}`` of grabbable objects, ``(id, class, can_open, room)`` of furniture and
        ``(id, class)`` of rooms, by id."""
        cached = self._lists
        if cached is not None and cached[0] is sim:
            return cached[1]
        memo = self._pool_entry.memo if self._pool_entry is not None else None
        lists = memo.get("node_lists") if memo is not None else None
        if lists is not None:  # the same initial graph: the same (read-only) lists
            self._lists = (sim, lists)
            return lists
        w = sim.world
        nodes = w.graph.nodes
        room_of, chars, rooms_ = w._room_of.get, w.chars, w._room_members  # w.room_of, inlined
        grabbable: dict[int, str] = {}
        furniture = []
        for i, n in sorted(nodes.items()):  # ids are unique: sorted by id
            if "GRABBABLE" in n.properties:
                grabbable[i] = n.class_name
            elif n.category == "Furniture":
                r = chars[i].room if i in chars else i if i in rooms_ else room_of(i)
                furniture.append((i, n.class_name, "CAN_OPEN" in n.properties, r))
        rooms = [(r, nodes[r].class_name) for r in sim.world.rooms]
        self._lists = (sim, (grabbable, furniture, rooms))
        if memo is not None and sim.tick == 0:
            memo["node_lists"] = self._lists[1]
        return self._lists[1]

    def episode_record(self) -> dict[str, Any]:
        """The scoring record of the episode so far (see :mod:`mindhelper_env.metrics`)."""
        sim, ref = self._sim, self._ref
        if sim is None or ref is None:
            raise gym.error.ResetNeeded("call reset() first")
        terminated, truncated = sim.episode_flags(self.max_ticks)
        return {
            "episode_id": ref.episode_id,
            "family": ref.family,
            "actions": [dict(a) for a in sim.actions],
            "executed": [ln.to_dict() for ln in sim.robot_lines],
            "focus_success": sim.focus_succeeded(),
            "harm": sim.harm(),
            "intervention_tick": _or_minus_one(sim.intervention_tick),
            "first_move_tick": _or_minus_one(sim.first_move_tick),
            "ticks": sim.tick,
            "steps": self._window,
            "terminated": terminated,
            "truncated": truncated,
            "reference": ref.to_dict(),
        }

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' "
                            "or 'rgb_array' to the constructor")
            return None
        if self._sim is None:
            raise gym.error.ResetNeeded("call reset() before render()")
        if self.render_mode == "ansi":
            sim = self._sim
            w = sim.world
            status = " | ".join(
                f"{a.name} in {w.name(w.chars[a.id].room) if w.chars[a.id].room else '?'}"
                + (f" holding {', '.join(w.name(h) for h in w.held_by(a.id))}"
                   if w.held_by(a.id) else "")
                for a in sim.actors)
            pend = "; ".join(str(x) for x in sim.pending) or "none"
            return (f"tick {sim.tick}  window {self._window}\n{self._last_text}\n"
                    f"people: {status}\nrobot program: {pend}\n")
        return self._render_rgb()

    def _draw(self, renderer: Any, events: list[Any], *, scoped: bool = False) -> np.ndarray:
        sim = self._sim
        assert sim is not None
        captions = [narrate_event(sim.world, ev, self._names, self._style, self._labels)
                    for ev in events]
        return renderer.render(
            sim.world,
            actors={a.id: (a.name, a.kind) for a in sim.actors},
            captions=captions,
            title=f"tick {sim.tick}  window {self._window}",
            cache_key=self._episode_counter,
            rooms=self._visible_rooms() if scoped and self.observability == "room" else None,
        )

    def _render_rgb(self) -> np.ndarray:
        if self._renderer is None:
            self._renderer = _make_renderer(self.render_size)
        return self._draw(self._renderer, self._last_events)

    def _frame(self, events: list[Any]) -> np.ndarray:
        if self._mirror is not None:
            return self._mirror.frame(self.frame_size)
        if self._frame_renderer is None:
            self._frame_renderer = _make_renderer(self.frame_size)
        return self._draw(self._frame_renderer, events, scoped=True)

    @property
    def _mirror_key(self) -> str:
        return "tdw" if self.backend == "tdw" else "unity"

    def _mirror_reset(self, sim: Simulation) -> None:
        """Mirror the new episode in the simulator of ``backend`` (Unity or a TDW build)."""
        if self._mirror is None:
            opts = dict(self._backend_options or {})
            if self.backend == "tdw":
                from mindhelper_env.backends.tdw_build import TDWEnvMirror

                self._mirror = TDWEnvMirror(**opts, size=self.frame_size)
            else:
                from mindhelper_env.backends.virtualhome_unity import UnityMirror

                if self.obs_mode != "text+rgb":
                    opts["camera"] = None
                self._mirror = UnityMirror(**opts)
        self._mirror.reset(sim)

    def _stacked(self) -> np.ndarray:
        if self.frame_stack == 1:
            return self._frames[-1].copy()
        return np.stack(list(self._frames))

    def close(self) -> None:
        self._renderer = None
        self._frame_renderer = None
        super().close()


# the family count comes from the registry (docstrings are None under python -OO)
if MindHelperEnv.__doc__:
    MindHelperEnv.__doc__ = MindHelperEnv.__doc__.replace(
        "{n_families}", str(len(V3_FAMILIES))).replace("{n_families_v2}", str(len(FAMILIES)))


def _or_minus_one(value: int | None) -> int:
    return -1 if value is None else int(value)

