"""The symbolic household world, usable on its own with VirtualHome environment graphs.

>>> from mindhelper_env.world import SceneGraph, World
>>> world = World(SceneGraph.from_virtualhome(graph_dict))      # doctest: +SKIP
>>> world.execute(1, "[walk] <fridge> (12)").ok                  # doctest: +SKIP
"""

from __future__ import annotations

from mindhelper_env.world.graph import RELATIONS, Node, SceneGraph
from mindhelper_env.world.house import generate_house
from mindhelper_env.world.script import (
    ScriptLine,
    ScriptParseError,
    is_silence,
    normalize_class,
    parse_line,
    parse_program,
)
from mindhelper_env.world.world import DEFAULT_REACH, ActionResult, Event, World

__all__ = [
    "RELATIONS",
    "Node",
    "SceneGraph",
    "World",
    "ActionResult",
    "Event",
    "DEFAULT_REACH",
    "ScriptLine",
    "ScriptParseError",
    "parse_line",
    "parse_program",
    "is_silence",
    "normalize_class",
    "generate_house",
]
