"""A pool of pre-validated training episodes, cached on disk, for fast resets.

Generating an episode (:func:`~mindhelper_env.scenarios.generator.generate_episode`: draft,
then validation by several simulated rollouts) costs ~10 ms, far more than the few steps an
episode lasts. :class:`EpisodePool` makes the env's *sampled* episodes (``reset()`` without
``options``) come from a fixed, numbered set instead:

* entry ``k`` is ``generate_episode(family_k, seed_k)`` — the same full validation — where
  ``(family_k, seed_k)`` is drawn from a random stream seeded by the pool's key and ``k``
  alone, so entry ``k`` is the same episode however and whenever it is generated;
* the env picks ``k = np_random.integers(size)``: the same env seed gives the same sequence of
  episodes whether the pool is warm or cold;
* an entry is generated on first use (or by :meth:`EpisodePool.fill`, optionally in a
  background thread), written to ``<cache dir>/pools/<key>/<k>.json`` (atomically, so
  processes sharing the directory cannot see half a file) and kept in memory, compactly, with
  its parsed :class:`~mindhelper_env.world.World`: a reset unpickles a fresh world (~0.15 ms)
  instead of parsing the graph (~1 ms).

The key is a digest of :data:`~mindhelper_env.scenarios.spec.GENERATOR_VERSION`, the family
weights and the pool format: a new generator never reads old files.

**The bundled pool.** The package ships the default pool's entries (the envs' default
family mix, procedurally generated houses: :data:`BUNDLE_DIR` ``/<key>.jsonl.xz``, one
compact spec per line, entry ``k`` on line ``k``), so that a user's first run starts warm
instead of generating thousands of episodes. On the first entry missing from disk the pool
unpacks the bundle into its cache directory (in memory for a pool that does not persist);
each bundled entry passes the same checks as a file on disk (generator, family, seed), and
one that fails them is generated. Maintainers rebuild it after a generator change with
``python -m mindhelper_env.scenarios.pool --bundle`` (``tests/test_pool.py`` fails while the
bundle is missing or stale).

**The ready entries.** Beside the bundle ships ``<key>.ready.bin``: each bundled entry in the
form a reset needs, its spec without the graph and its parsed world, both pickled, each
compressed on its own so that an entry is read without the others (format in
:class:`_ReadyEntries`). A cold pool takes its entries from there first (~0.1 ms each, where
parsing an entry's JSON and building its world costs ~3 ms), so a first run neither unpacks
the bundle nor parses JSON until something asks for a complete spec (:meth:`EpisodePool.spec`,
e.g. ``env.unwrapped.episode_spec``). The file names its format, generator, pool key and each
entry's ``(family, seed)``; one that does not match, or an entry that does not decompress, is
logged and the entry comes from the JSON. The pickles name only this package's classes and
builtins (no numpy), and ``tests/test_pool.py`` checks that they unpickle to the same worlds
as the JSON builds, so a change to the world's layout also needs the bundle rebuilt.

The cache directory is
``$MINDHELPER_CACHE_DIR``, else ``$XDG_CACHE_HOME/mindhelper-env``, else
``~/.cache/mindhelper-env``. A file that cannot be read, or that does not hold the episode it
should, is regenerated.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import pickle
import shutil
import tempfile
import threading
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mindhelper_env.backends.symbolic import ROBOT_ID
from mindhelper_env.paths import cache_dir
from mindhelper_env.scenarios.generator import GENERATORS, generate_episode
from mindhelper_env.scenarios.spec import FAMILIES, GENERATOR_VERSION, V3_FAMILIES, is_v3
from mindhelper_env.world.world import World

__all__ = ["EpisodePool", "PoolEntry", "cache_dir", "get_pool", "DEFAULT_POOL_SIZE",
           "BUNDLE_DIR", "build_bundle"]

logger = logging.getLogger(__name__)

#: Default number of distinct sampled training episodes per env configuration.
DEFAULT_POOL_SIZE = 4096
_POOL_FORMAT = 1
#: Where the bundled pools live (see the module docstring).
BUNDLE_DIR = Path(__file__).resolve().parent / "pool_data"


@dataclass(frozen=True)
class PoolEntry:
    """One pool episode, kept compact in memory (~12 KB): its spec without the graph and its
    parsed world, both pickled (in this process, or read from the bundled ready entries for
    a bundled entry; never from the cache directory). :meth:`load` gives
    fresh objects each time. Once played, :attr:`memo` adds a few KB: what an env derived
    from the episode's initial state alone (pure functions of the spec), reused at the
    entry's next reset."""

    index: int
    family: str
    seed: int
    light: bytes
    world: bytes
    #: values an env derives from this episode's initial state alone (its reset narration,
    #: its node lists), kept so that the next reset of this entry reuses them
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def load(self) -> tuple[dict[str, Any], World]:
        """A fresh ``(spec without "graph", World)`` for a new simulation of this episode."""
        # unpickling creates many small objects at once: no collection passes meanwhile
        enabled = gc.isenabled()
        gc.disable()
        try:
            return pickle.loads(self.light), pickle.loads(self.world)
        finally:
            if enabled:
                gc.enable()


class EpisodePool:
    """Numbered, validated episodes of one family mix (see the module docstring).

    Args:
        families: ``{family: weight}`` (positive total).
        size: number of entries (the env draws ``k`` uniformly in ``range(size)``).
        directory: cache directory (default :func:`cache_dir`); ``None`` there and
            ``persist=False`` keep the pool in memory only.
        persist: write generated entries to disk.
        house: a :class:`~mindhelper_env.world.houses.HouseSet` the episodes are set in
            (``None``: procedurally generated houses); part of the key.
    """

    def __init__(self, families: Mapping[str, float], size: int = DEFAULT_POOL_SIZE, *,
                 directory: str | os.PathLike[str] | None = None, persist: bool = True,
                 house: Any = None, generator: str | None = None) -> None:
        #: the generator of the entries (:data:`~mindhelper_env.scenarios.generator.GENERATORS`)
        self.generator = GENERATOR_VERSION if generator is None else str(generator)
        if self.generator not in GENERATORS:
            raise ValueError(f"unknown generator {generator!r}; expected one of {list(GENERATORS)}")
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"pool size must be a positive int, got {size!r}")
        fams = {str(f): float(w) for f, w in families.items() if float(w) > 0}
        unknown = set(fams) - set(V3_FAMILIES if is_v3(self.generator) else FAMILIES)
        if not fams or unknown:
            raise ValueError(f"pool families must be known families with positive weights, "
                             f"got {dict(families)!r}")
        self.families = dict(sorted(fams.items()))
        self.size = int(size)
        self.house = house
        config: dict[str, Any] = {"format": _POOL_FORMAT, "generator": self.generator,
                                  "families": self.families}
        if house is not None:
            config["house"] = house.key
        digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
        self.key = digest[:20]
        self._stream_seed = int(digest[:16], 16)
        base = Path(directory) if directory is not None else cache_dir()
        self._base = str(base)
        self.directory: Path | None = base / "pools" / self.key if persist else None
        self._names = list(self.families)
        weights = np.array([self.families[n] for n in self._names])
        self._p = weights / weights.sum()
        self._entries: dict[int, PoolEntry] = {}
        self._full: dict[int, bytes] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        #: bundled entries kept in memory (a pool that does not persist); None: not unpacked
        self._bundled: dict[int, bytes] | None = None
        #: the bundle's ready entries (None: not opened yet; False: none or unusable)
        self._ready: _ReadyEntries | bool | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its configuration (an env pickled mid-episode does not carry the pool);
        # in the same process this is the shared pool again, elsewhere entries reload lazily.
        if self.directory is None:
            return (_memory_pool, (self.families, self.size, self.house, self.generator))
        return (get_pool, (self.families, self.size, self._base, self.house, self.generator))

    # ------------------------------------------------------------------ entries
    def source(self, k: int) -> tuple[str, int]:
        """``(family, seed)`` of entry ``k`` (a function of the pool key and ``k`` only)."""
        rng = np.random.default_rng([self._stream_seed, int(k)])
        fam = self._names[int(rng.choice(len(self._names), p=self._p))]
        return fam, int(rng.integers(0, 2**31 - 1))

    def __len__(self) -> int:
        return self.size

    @property
    def n_loaded(self) -> int:
        """Entries held in memory."""
        return len(self._entries)

    def sample(self, rng: np.random.Generator) -> PoolEntry:
        """Entry ``rng.integers(size)``."""
        return self.get(int(rng.integers(self.size)))

    def get(self, k: int) -> PoolEntry:
        """Entry ``k``: from memory, else from disk, else generated (and written)."""
        entry = self._entries.get(k)
        if entry is not None:
            return entry
        if not 0 <= k < self.size:
            raise IndexError(f"pool entry {k} out of range(0, {self.size})")
        family, seed = self.source(k)
        ready = self._ready_entry(k, family, seed)
        if ready is not None:
            entry = PoolEntry(k, family, seed, *ready)
            with self._lock:
                return self._entries.setdefault(k, entry)
        spec = self._read(k, family, seed)
        if spec is None:
            spec = generate_episode(family, seed, house=self.house, generator=self.generator)
            self._write(k, spec)
        entry = PoolEntry(k, family, seed, *_entry_pickles(spec))
        with self._lock:
            if self.directory is None:
                self._full.setdefault(k, pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
            return self._entries.setdefault(k, entry)

    def spec(self, k: int) -> dict[str, Any]:
        """The complete spec of entry ``k`` (graph included), e.g. to replay it."""
        entry = self.get(k)
        full = self._full.get(k)
        if full is not None:
            return pickle.loads(full)
        spec = self._read(k, entry.family, entry.seed)
        if spec is None:  # the file went away: the same episode again
            spec = generate_episode(entry.family, entry.seed, house=self.house,
                                    generator=self.generator)
            self._write(k, spec)
        return spec

    def fill(self, n: int | None = None, *,
             progress: Callable[[int, int], None] | None = None) -> int:
        """Load or generate entries ``0 .. n-1`` (default: all); returns how many were loaded
        or generated now."""
        n = self.size if n is None else min(int(n), self.size)
        done = 0
        for k in range(n):
            if self._stop.is_set():
                break
            if k not in self._entries:
                self.get(k)
                done += 1
            if progress is not None:
                progress(k + 1, n)
        return done

    def fill_in_background(self, n: int | None = None) -> threading.Thread:
        """Run :meth:`fill` in a daemon thread (the env keeps working meanwhile; it shares
        the interpreter, so steps are slower until the thread ends). Idempotent."""
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self.fill, args=(n,), daemon=True,
                                            name=f"mindhelper-pool-{self.key[:8]}")
            self._thread.start()
        return self._thread

    def stop(self) -> None:
        """Ask a background fill to stop after the entry it is on."""
        self._stop.set()

    # ------------------------------------------------------------------ disk
    def _path(self, k: int) -> Path | None:
        return None if self.directory is None else self.directory / f"{k}.json"

    @property
    def bundle_path(self) -> Path:
        """The bundled pool file for this pool's key (it may not exist)."""
        return BUNDLE_DIR / f"{self.key}.jsonl.xz"

    @property
    def ready_path(self) -> Path:
        """The bundled ready entries for this pool's key (they may not exist)."""
        return BUNDLE_DIR / f"{self.key}.ready.bin"

    def _ready_entry(self, k: int, family: str, seed: int) -> tuple[bytes, bytes] | None:
        """Entry ``k``'s pickles from the bundled ready entries, or None (no such file, a
        file that cannot be read or is not this pool's, an entry beyond it or that fails its
        checks: each logged once per pool, and the entry then comes from the JSON)."""
        ready = self._ready
        if ready is None:
            with self._lock:
                if self._ready is None:
                    self._ready = False
                    if self.house is None and self.ready_path.exists():
                        try:
                            self._ready = _ReadyEntries(self.ready_path, self.key,
                                                        self.generator)
                        except (OSError, ValueError) as err:
                            logger.warning("episode pool: cannot use the ready entries %s "
                                           "(%s); reading the JSON bundle", self.ready_path,
                                           err)
                ready = self._ready
        if not ready or k >= min(ready.size, self.size):
            return None
        try:
            return ready.entry(k, family, seed)
        except (ValueError, zlib.error) as err:
            logger.warning("episode pool: ready entry %d of %s is unusable (%s); reading the "
                           "JSON bundle", k, self.ready_path, err)
            return None

    def _unpack_bundle(self) -> None:
        """Copy the bundled entries into the cache directory (or memory), once."""
        with self._lock:
            if self._bundled is not None:
                return
            self._bundled = {}
            if self.house is not None or not self.bundle_path.exists():
                return
            import lzma

            try:
                lines = lzma.decompress(self.bundle_path.read_bytes()).splitlines()
            except (OSError, lzma.LZMAError) as err:
                logger.warning("episode pool: cannot read the bundle %s (%s); generating",
                               self.bundle_path, err)
                return
            lines = lines[:self.size]
            if self.directory is None:
                self._bundled = dict(enumerate(lines))
                return
            try:
                _unpack_lines(self.directory, lines)
            except OSError as err:  # a read-only cache: keep the bundle in memory
                logger.warning("episode pool: cannot unpack the bundle into %s (%s); keeping "
                               "it in memory", self.directory, err)
                self._bundled = dict(enumerate(lines))

    def _read(self, k: int, family: str, seed: int) -> dict[str, Any] | None:
        path = self._path(k)
        if path is None or not path.exists():
            if self._bundled is None:
                self._unpack_bundle()
            line = (self._bundled or {}).get(k)
            if line is None and (path is None or not path.exists()):
                return None
        else:
            line = None
        try:
            spec = json.loads(line if line is not None else path.read_bytes())
        except (OSError, ValueError) as err:
            logger.warning("episode pool: cannot read entry %d at %s (%s); regenerating", k,
                           path if line is None else self.bundle_path, err)
            return None
        if not (isinstance(spec, dict) and spec.get("generator") == self.generator
                and spec.get("family") == family and spec.get("seed") == seed
                and spec.get("house") == (None if self.house is None else self.house.name)
                and "graph" in spec and "reference" in spec):
            logger.warning("episode pool: entry %d (%s) does not hold %s seed %d; "
                           "regenerating", k, path if line is None else self.bundle_path,
                           family, seed)
            return None
        return spec

    def _write(self, k: int, spec: dict[str, Any]) -> None:
        path = self._path(k)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # json.dumps (the C encoder) and one write: the same bytes as json.dump, which
            # encodes chunk by chunk in Python (a tenth of a cold entry's cost)
            _atomic_write(path, json.dumps(spec, separators=(",", ":")).encode("utf-8"))
        except OSError as err:  # a read-only cache only costs speed
            logger.warning("episode pool: cannot write %s (%s); keeping it in memory", path, err)


def _entry_pickles(spec: dict[str, Any]) -> tuple[bytes, bytes]:
    """A pool entry's two pickles: its spec without the graph, and its parsed world."""
    world = World(spec["graph"], robot_ids=(ROBOT_ID,))
    world.graph.share_values()  # a smaller pickle, unpickled at every reset
    world.graph.pack_boxes()  # boxes are built when read, not at every reset
    light = {key: val for key, val in spec.items() if key != "graph"}
    return (pickle.dumps(light, protocol=pickle.HIGHEST_PROTOCOL),
            pickle.dumps(world, protocol=pickle.HIGHEST_PROTOCOL))


_READY_MAGIC = b"MINDHELPER-POOL-READY\n"
_READY_FORMAT = 1


class _ReadyEntries:
    """The bundled pool's ready entries (``<key>.ready.bin``, see the module docstring):
    random access to each entry's pickles, each compressed on its own (zlib, one shared
    preset dictionary), so that a cold pool reads only the entries it plays.

    Layout: :data:`_READY_MAGIC`; one line of JSON (``format``, ``generator``, ``key``,
    ``size``, ``sources``: ``[family, seed]`` per entry, ``dictionary``: its length); the
    dictionary; ``size + 1`` little-endian uint64 offsets into the data after them; the data
    (entry ``k``: a uint32 length of the spec's pickle, the spec's pickle, the world's)."""

    def __init__(self, path: Path, key: str, generator: str = GENERATOR_VERSION) -> None:
        data = path.read_bytes()
        if not data.startswith(_READY_MAGIC):
            raise ValueError("not a ready-entries file")
        end = data.index(b"\n", len(_READY_MAGIC))
        head = json.loads(data[len(_READY_MAGIC):end])
        if not isinstance(head, dict):
            raise ValueError("a malformed header")
        if head.get("format") != _READY_FORMAT or head.get("generator") != generator \
                or head.get("key") != key:
            raise ValueError(f"it holds format {head.get('format')}, generator "
                             f"{head.get('generator')!r}, key {head.get('key')!r}; this pool "
                             f"needs format {_READY_FORMAT}, {generator!r}, {key!r}")
        try:
            self.size = int(head["size"])
            self.sources = [(str(f), int(s)) for f, s in head["sources"]]
            dictionary = int(head["dictionary"])
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"a malformed header ({err!r})") from None
        at = end + 1
        self._zdict = data[at:at + dictionary]
        at += len(self._zdict)
        self._offsets = np.frombuffer(data, dtype="<u8", count=self.size + 1, offset=at)
        self._base = at + 8 * (self.size + 1)
        if len(self.sources) != self.size or self._base + int(self._offsets[-1]) != len(data):
            raise ValueError("truncated or inconsistent")
        self._data = data

    def entry(self, k: int, family: str, seed: int) -> tuple[bytes, bytes]:
        if self.sources[k] != (family, seed):
            raise ValueError(f"it holds {self.sources[k]}, not ({family!r}, {seed})")
        lo, hi = int(self._offsets[k]), int(self._offsets[k + 1])
        inflate = zlib.decompressobj(zdict=self._zdict)
        blob = inflate.decompress(self._data[self._base + lo:self._base + hi])
        if not inflate.eof or len(blob) < 4:
            raise ValueError("truncated")
        n = int.from_bytes(blob[:4], "little")
        return blob[4:4 + n], blob[4 + n:]

    @staticmethod
    def write(path: Path, key: str, specs: list[dict[str, Any]],
              generator: str = GENERATOR_VERSION) -> None:
        """Write the ready entries of ``specs`` (entry ``k`` is ``specs[k]``, made by
        ``generator``) to ``path``."""
        blobs = []
        for spec in specs:
            light, world = _entry_pickles(spec)
            blobs.append(len(light).to_bytes(4, "little") + light + world)
        # the preset dictionary: the end of the first entries (what every entry repeats)
        zdict = b"".join(blobs[:8])[-32768:]
        packed = []
        for blob in blobs:
            deflate = zlib.compressobj(9, zdict=zdict)
            packed.append(deflate.compress(blob) + deflate.flush())
        offsets = np.cumsum([0] + [len(b) for b in packed]).astype("<u8")
        head = {"format": _READY_FORMAT, "generator": generator, "key": key,
                "size": len(specs), "sources": [[s["family"], s["seed"]] for s in specs],
                "dictionary": len(zdict)}
        path.write_bytes(_READY_MAGIC + json.dumps(head, separators=(",", ":")).encode()
                         + b"\n" + zdict + offsets.tobytes() + b"".join(packed))


def _unpack_lines(directory: Path, lines: list[bytes]) -> None:
    """Write ``lines[k]`` to ``directory/<k>.json`` for each ``k`` whose file is missing,
    atomically: the files are written in a private temporary directory next to
    ``directory``, which then becomes ``directory`` in one rename when there is none yet
    (a cold cache: one rename instead of one temporary file per entry); otherwise each
    missing file is moved in by itself (``os.replace``), so processes sharing the directory
    never see half a file either way."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    # (os.mkdir: the permissions a plain mkdir gives, as the directory it becomes)
    tmp = directory.parent / f".{directory.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    os.mkdir(tmp)
    try:
        fresh = not directory.exists()
        into, there = str(tmp), str(directory)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        for k, line in enumerate(lines):
            name = f"{k}.json"
            if fresh or not os.path.exists(os.path.join(there, name)):
                fd = os.open(os.path.join(into, name), flags, 0o666)
                try:
                    view = memoryview(line)
                    while view:  # (os.write may write less than asked)
                        view = view[os.write(fd, view):]
                finally:
                    os.close(fd)
        if fresh:
            try:
                os.rename(tmp, directory)  # fails if the directory appeared meanwhile
                return
            except OSError:
                if not directory.is_dir():
                    raise
        for name in os.listdir(tmp):
            path = directory / name
            if not path.exists():
                os.replace(tmp / name, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory, so that
    processes sharing the directory never see half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


_POOLS: dict[tuple[str, int, str], EpisodePool] = {}
_POOLS_LOCK = threading.Lock()


def get_pool(families: Mapping[str, float], size: int = DEFAULT_POOL_SIZE,
             directory: str | os.PathLike[str] | None = None, house: Any = None,
             generator: str | None = None) -> EpisodePool:
    """The process-wide pool for this configuration (envs in one process share it)."""
    base = str(Path(directory) if directory is not None else cache_dir())
    probe = EpisodePool(families, size, directory=base, house=house, generator=generator)
    key = (probe.key, probe.size, base)
    with _POOLS_LOCK:
        return _POOLS.setdefault(key, probe)


def _memory_pool(families: Mapping[str, float], size: int, house: Any = None,
                 generator: str | None = None) -> EpisodePool:
    return EpisodePool(families, size, persist=False, house=house, generator=generator)


def _generate_entry(job: tuple[str, int]) -> bytes:
    family, seed = job
    return json.dumps(generate_episode(family, seed), separators=(",", ":")).encode()


def build_bundle(size: int = DEFAULT_POOL_SIZE, workers: int = 1,
                 directory: str | os.PathLike[str] | None = None) -> Path:
    """Generate the default pool's first ``size`` entries and write them as the bundle
    (:data:`BUNDLE_DIR` by default); other bundles there are removed. Returns the path."""
    import lzma
    from multiprocessing import get_context

    from mindhelper_env.scenarios.spec import family_weights

    pool = EpisodePool(family_weights(GENERATOR_VERSION), size, persist=False)
    jobs = [pool.source(k) for k in range(size)]
    if workers > 1:
        with get_context("spawn").Pool(workers) as procs:
            lines = procs.map(_generate_entry, jobs, chunksize=16)
    else:
        lines = [_generate_entry(j) for j in jobs]
    out_dir = Path(directory) if directory is not None else BUNDLE_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in [*out_dir.glob("*.jsonl.xz"), *out_dir.glob("*.ready.bin")]:
        old.unlink()
    path = out_dir / f"{pool.key}.jsonl.xz"
    data = lzma.compress(b"\n".join(lines) + b"\n", preset=9 | lzma.PRESET_EXTREME)
    path.write_bytes(data)
    _ReadyEntries.write(out_dir / f"{pool.key}.ready.bin", pool.key,
                        [json.loads(line) for line in lines], pool.generator)
    return path


if __name__ == "__main__":  # python -m mindhelper_env.scenarios.pool --bundle [--workers N]
    import argparse

    ap = argparse.ArgumentParser(description="rebuild the bundled default episode pool")
    ap.add_argument("--bundle", action="store_true", required=True)
    ap.add_argument("--size", type=int, default=DEFAULT_POOL_SIZE)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    print(build_bundle(args.size, args.workers))
