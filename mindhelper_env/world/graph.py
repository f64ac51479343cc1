"""Scene graphs in VirtualHome's environment-graph format.

A graph is ``{"nodes": [...], "edges": [...]}``. A node is
``{"id", "class_name", "category", "properties", "states", "bounding_box"?, "prefab_name"?}``;
an edge is ``{"from_id", "relation_type", "to_id"}``. :class:`SceneGraph` reads such a dict,
keeps every key it does not know (so an exported graph means what the imported one meant) and
stores edges as adjacency sets so that relations can be changed in constant time.

Graphs are copied often (an episode pool unpickles a parsed world at every reset), so
:meth:`SceneGraph.share_values` makes equal strings and property sets of different nodes
one object, and a :class:`Node` pickles as one tuple of its fields: a pickled world is then
smaller and loads faster, with the same contents. :meth:`SceneGraph.pack_boxes` goes
further: a plain bounding box (``{"center": [x, y, z], "size": [x, y, z]}`` of floats) is
kept as 48 bytes until :attr:`Node.bounding_box` is first read, which rebuilds the same
dict, so a copied or unpickled graph does not build the boxes an episode never looks at.
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mindhelper_env.world.script import normalize_class

__all__ = ["Node", "SceneGraph", "RELATIONS"]

#: Relation types VirtualHome uses. Others load too and are kept as they are.
RELATIONS = (
    "INSIDE",
    "ON",
    "CLOSE",
    "FACING",
    "BETWEEN",
    "HOLDS_RH",
    "HOLDS_LH",
    "SITTING",
)

_NODE_KEYS = ("id", "class_name", "category", "properties", "states", "bounding_box", "prefab_name")


@dataclass(slots=True)
class Node:
    """A scene-graph node. ``key`` is the normalized class name used for matching."""

    id: int
    class_name: str
    category: str = ""
    properties: frozenset[str] = frozenset()
    states: set[str] = field(default_factory=set)
    bounding_box: dict[str, Any] | None = None
    prefab_name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    key: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            self.key = normalize_class(self.class_name)

    @property
    def height(self) -> float | None:
        """Height of the node's centre above the floor (metres), from its bounding box."""
        bb = self.bounding_box
        if not bb:
            return None
        try:
            return float(bb["center"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            return None

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # pickled as one tuple of fields, restored without __init__ (as pickle's default
        # does, but without an intermediate state dict: episode pools unpickle a whole world
        # at every reset); a packed bounding box stays packed
        return _node_from_fields, (self.id, self.class_name, self.category, self.properties,
                                   self.states, _BOX_SLOT.__get__(self, Node),
                                   self.prefab_name, self.extra, self.key)

    def clone(self) -> Node:
        """An independent copy: mutable parts (states, bounding box, extra) are copied."""
        box = _BOX_SLOT.__get__(self, Node)
        if box is not None and type(box) is not bytes:  # packed bytes are immutable
            box = {k: v[:] if type(v) is list else copy.deepcopy(v) for k, v in box.items()}
        extra = self.extra
        extra = {k: v if isinstance(v, _SCALARS) else copy.deepcopy(v)
                 for k, v in extra.items()} if extra else {}
        return Node(self.id, self.class_name, self.category, self.properties, set(self.states),
                    box, self.prefab_name, extra, self.key)

    def to_virtualhome(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "class_name": self.class_name,
            "category": self.category,
            "properties": sorted(self.properties),
            "states": sorted(self.states),
        }
        if self.bounding_box is not None:
            d["bounding_box"] = _copy_box(self.bounding_box)
        if self.prefab_name is not None:
            d["prefab_name"] = self.prefab_name
        d.update(copy.deepcopy(self.extra))
        return d


def _node_from_fields(*values: Any) -> Node:
    node = object.__new__(Node)
    (node.id, node.class_name, node.category, node.properties, node.states,
     node.bounding_box, node.prefab_name, node.extra, node.key) = values
    return node


# Node.bounding_box: the slot holds either the box or, after SceneGraph.pack_boxes, the
# six floats of a plain box packed in 48 bytes; reading the attribute unpacks them once.
_BOX_SLOT: Any = Node.bounding_box
_BOX_FORMAT = struct.Struct("<6d")


def _get_box(node: Node) -> dict[str, Any] | None:
    box = _BOX_SLOT.__get__(node, Node)
    if type(box) is bytes:
        cx, cy, cz, sx, sy, sz = _BOX_FORMAT.unpack(box)
        box = {"center": [cx, cy, cz], "size": [sx, sy, sz]}
        _BOX_SLOT.__set__(node, box)
    return box


def _pack_box(box: Any) -> bytes | None:
    """48 bytes for a plain box of floats (the same dict comes back), else None."""
    if type(box) is not dict or tuple(box) != ("center", "size"):
        return None
    center, size = box["center"], box["size"]
    if type(center) is not list or type(size) is not list or len(center) != 3 \
            or len(size) != 3 or not all(type(v) is float for v in (*center, *size)):
        return None
    return _BOX_FORMAT.pack(*center, *size)


Node.bounding_box = property(  # type: ignore[assignment,method-assign]
    _get_box, _BOX_SLOT.__set__, doc="The node's bounding box (``center``, ``size``) or None.")


class SceneGraph:
    """Nodes and typed edges with constant-time edge updates.

    Use :meth:`from_virtualhome` / :meth:`to_virtualhome` to convert from and to the JSON
    dict VirtualHome's ``environment_graph()`` returns.

    Edges are kept by source node; the index by target node (for :meth:`sources` and
    :meth:`remove_node`) is built on first use and then kept up to date, so graphs that are
    copied or unpickled and never asked for sources do not carry it.
    """

    __slots__ = ("nodes", "_out", "_in", "_n_edges")

    def __init__(self) -> None:
        self.nodes: dict[int, Node] = {}
        self._out: dict[int, dict[str, set[int]]] = {}
        self._in: dict[int, dict[str, set[int]]] | None = None  # built by _sources_index
        self._n_edges = 0

    def _sources_index(self) -> dict[int, dict[str, set[int]]]:
        index = self._in
        if index is None:
            index = {nid: {} for nid in self.nodes}
            for f, rels in self._out.items():
                for r, ts in rels.items():
                    for t in ts:
                        index[t].setdefault(r, set()).add(f)
            self._in = index
        return index

    # -- construction -------------------------------------------------------------------
    def add_node(self, node: Node) -> Node:
        if node.id in self.nodes:
            raise ValueError(f"duplicate node id {node.id}")
        self.nodes[node.id] = node
        self._out[node.id] = {}
        if self._in is not None:
            self._in[node.id] = {}
        return node

    def add_edge(self, from_id: int, relation: str, to_id: int) -> bool:
        """Add an edge; returns False if it was already there."""
        targets = self._out[from_id].setdefault(relation, set())
        if to_id in targets:
            return False
        if to_id not in self.nodes:
            raise KeyError(to_id)
        targets.add(to_id)
        if self._in is not None:
            self._in[to_id].setdefault(relation, set()).add(from_id)
        self._n_edges += 1
        return True

    def remove_edge(self, from_id: int, relation: str, to_id: int) -> bool:
        """Remove an edge; returns False if it was not there."""
        targets = self._out[from_id].get(relation)
        if not targets or to_id not in targets:
            return False
        targets.discard(to_id)
        if self._in is not None:
            self._in[to_id][relation].discard(from_id)
        self._n_edges -= 1
        return True

    def remove_edges_from(self, from_id: int, relation: str) -> list[int]:
        """Remove every ``from_id -relation-> *`` edge; returns the former targets."""
        targets = self._out[from_id].get(relation)
        if not targets:
            return []
        old = list(targets)
        if self._in is not None:
            for t in old:
                self._in[t][relation].discard(from_id)
        targets.clear()
        self._n_edges -= len(old)
        return old

    def remove_node(self, node_id: int) -> Node:
        """Remove a node and every edge from or to it."""
        for rel, targets in list(self._out[node_id].items()):
            for t in list(targets):
                self.remove_edge(node_id, rel, t)
        index = self._sources_index()
        for rel, sources in list(index[node_id].items()):
            for f in list(sources):
                self.remove_edge(f, rel, node_id)
        del self._out[node_id], index[node_id]
        return self.nodes.pop(node_id)

    # -- queries ------------------------------------------------------------------------
    def targets(self, from_id: int, relation: str) -> set[int] | frozenset[int]:
        return self._out[from_id].get(relation, _EMPTY)

    def sources(self, to_id: int, relation: str) -> set[int] | frozenset[int]:
        return self._sources_index()[to_id].get(relation, _EMPTY)

    def has_edge(self, from_id: int, relation: str, to_id: int) -> bool:
        return to_id in self._out[from_id].get(relation, _EMPTY)

    def edges(self) -> Iterator[tuple[int, str, int]]:
        for f, rels in self._out.items():
            for r, ts in rels.items():
                for t in ts:
                    yield (f, r, t)

    @property
    def n_edges(self) -> int:
        return self._n_edges

    def by_class(self, class_name: str) -> list[Node]:
        k = normalize_class(class_name)
        return [n for n in self.nodes.values() if n.key == k]

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def share_values(self) -> None:
        """Make equal strings (class names, categories, keys, properties, states) and equal
        property sets of different nodes one object each; values are unchanged. A pickle
        stores a shared object once, so the graph then pickles smaller and unpickles faster
        (episode pools keep pickled worlds)."""
        share: Any = {}.setdefault
        for n in self.nodes.values():
            n.class_name = share(n.class_name, n.class_name)
            n.category = share(n.category, n.category)
            n.key = share(n.key, n.key)
            props = frozenset(share(p, p) for p in n.properties)
            n.properties = share(props, props)
            n.states = {share(x, x) for x in n.states}

    def pack_boxes(self) -> None:
        """Keep plain bounding boxes (``{"center": [3 floats], "size": [3 floats]}``) packed
        until read (see the module docstring); what :attr:`Node.bounding_box` returns is
        unchanged. Episode pools pack the worlds they pickle."""
        for n in self.nodes.values():
            packed = _pack_box(_BOX_SLOT.__get__(n, Node))
            if packed is not None:
                _BOX_SLOT.__set__(n, packed)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # nodes as one table of their fields, rebuilt in one call (not one call per node);
        # the index by target node is rebuilt when needed
        box_slot, box_owner = _BOX_SLOT.__get__, Node
        rows = tuple((n.id, n.class_name, n.category, n.properties, n.states,
                      box_slot(n, box_owner), n.prefab_name, n.extra, n.key)
                     for n in self.nodes.values())
        return _graph_from_parts, (rows, self._out, self._n_edges)

    def copy(self) -> SceneGraph:
        """An independent copy (a structural copy; no JSON round trip)."""
        g = SceneGraph.__new__(SceneGraph)
        g.nodes = {nid: n.clone() for nid, n in self.nodes.items()}
        g._out = {nid: {r: set(ts) for r, ts in rels.items()} for nid, rels in self._out.items()}
        g._in = None  # rebuilt from the copy's edges when needed
        g._n_edges = self._n_edges
        return g

    # -- VirtualHome JSON ---------------------------------------------------------------
    @classmethod
    def from_virtualhome(cls, data: dict[str, Any]) -> SceneGraph:
        """Build a graph from VirtualHome environment-graph JSON.

        Raises ``ValueError`` naming the problem for malformed graphs (not a dict, missing
        node ids or class names, duplicate ids, edges to nodes that do not exist). Unknown
        classes, categories, states, properties, relation types and extra keys are kept.
        """
        if not isinstance(data, dict):
            raise ValueError(f"a scene graph must be a dict, got {type(data).__name__}")
        nodes = data.get("nodes")
        edges = data.get("edges", [])
        if not isinstance(nodes, list):
            raise ValueError("scene graph has no 'nodes' list")
        if not isinstance(edges, list):
            raise ValueError("scene graph 'edges' must be a list")
        g = cls()
        for i, raw in enumerate(nodes):
            if not isinstance(raw, dict):
                raise ValueError(f"node #{i} is not an object")
            nid = raw.get("id")
            if isinstance(nid, bool) or not isinstance(nid, int):
                raise ValueError(f"node #{i} has no integer 'id' (got {nid!r})")
            cname = raw.get("class_name")
            if not isinstance(cname, str) or not cname.strip():
                raise ValueError(f"node {nid} has no 'class_name'")
            props = raw.get("properties") or []
            states = raw.get("states") or []
            if not isinstance(props, list) or not isinstance(states, list):
                raise ValueError(f"node {nid}: 'properties' and 'states' must be lists")
            if nid in g.nodes:
                raise ValueError(f"duplicate node id {nid}")
            g.add_node(
                Node(
                    id=nid,
                    class_name=cname,
                    category=str(raw.get("category") or ""),
                    properties=frozenset(str(p).upper() for p in props),
                    states={str(s).upper() for s in states},
                    bounding_box=_copy_box(raw.get("bounding_box")),
                    prefab_name=raw.get("prefab_name"),
                    extra={k: copy.deepcopy(v) for k, v in raw.items() if k not in _NODE_KEYS},
                )
            )
        for i, e in enumerate(edges):
            if not isinstance(e, dict):
                raise ValueError(f"edge #{i} is not an object")
            f, r, t = e.get("from_id"), e.get("relation_type"), e.get("to_id")
            if not isinstance(r, str) or not r:
                raise ValueError(f"edge #{i} ({f} -> {t}) has no 'relation_type'")
            for end, val in (("from_id", f), ("to_id", t)):
                if isinstance(val, bool) or not isinstance(val, int):
                    raise ValueError(f"edge #{i} has no integer '{end}' (got {val!r})")
                if val not in g.nodes:
                    raise ValueError(
                        f"edge #{i} {f} -{r}-> {t} is dangling: node {val} does not exist"
                    )
            g.add_edge(f, r.upper(), t)
        return g

    def to_virtualhome(self) -> dict[str, Any]:
        """Export as VirtualHome environment-graph JSON (nodes sorted by id)."""
        return {
            "nodes": [self.nodes[i].to_virtualhome() for i in sorted(self.nodes)],
            "edges": [
                {"from_id": f, "relation_type": r, "to_id": t}
                for f, r, t in sorted(self.edges())
            ],
        }


_EMPTY: frozenset[int] = frozenset()


def _graph_from_parts(rows: tuple[tuple[Any, ...], ...], out: dict[int, dict[str, set[int]]],
                      n_edges: int) -> SceneGraph:
    new, node_cls, set_box = object.__new__, Node, _BOX_SLOT.__set__
    nodes = {}
    for row in rows:
        n = new(node_cls)
        n.id, n.class_name, n.category, n.properties, n.states, box, n.prefab_name, \
            n.extra, n.key = row
        set_box(n, box)
        nodes[row[0]] = n
    g = SceneGraph.__new__(SceneGraph)
    g.nodes, g._out, g._in, g._n_edges = nodes, out, None, n_edges
    return g
_SCALARS = (str, int, float, bool, type(None))


def _copy_box(box: Any) -> Any:
    """Copy a bounding box; the usual ``{"center": [..], "size": [..]}`` without deepcopy."""
    if isinstance(box, dict) and box.keys() <= {"center", "size"} and all(
        isinstance(v, list) for v in box.values()
    ):
        return {k: list(v) for k, v in box.items()}
    return copy.deepcopy(box)
