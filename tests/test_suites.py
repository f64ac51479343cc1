"""Tests for mindhelper_env.scenarios.suites and mindhelper_env.schemas (docs/data-format.md)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindhelper_env.actors.actor import ACTOR_KINDS
from mindhelper_env.scenarios import suites as S
from mindhelper_env.scenarios.generator import generate_episode
from mindhelper_env.scenarios.spec import (
    FAMILIES,
    HELP_FAMILIES,
    SILENT_FAMILIES,
    SILENT_SHARES,
    TWINS,
)
from mindhelper_env.schemas import SCHEMA_NAMES, get_validator, load_schema
from mindhelper_env.world.world import World

DEV = "vh-dev-v2"
TEST = "vh-test-v2"

# The released digests ship inside the package (the release ledger,
# scenarios/suites/releases.json; tests/test_releases.py). If the pinned-digest test fails,
# episode generation changed: bump GENERATOR_VERSION and release new suite names instead of
# changing the episodes of a released suite (mindhelper_env.scenarios.releases).

PUBLIC_KEYS = {"episode_id", "suite", "index", "graph", "robot_id", "people", "horizon"}


# ----------------------------------------------------------------------------- helpers
@pytest.fixture(scope="module")
def dev_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """vh-dev-v2 exported once for the module (do not modify; copy with `fresh`)."""
    return S.export_suite(DEV, tmp_path_factory.mktemp("dev") / "vh-dev-v2")


@pytest.fixture()
def fresh(dev_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the exported dev suite, safe to tamper with."""
    return Path(shutil.copytree(dev_dir, tmp_path / "suite"))


def read_lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines))


def resign(root: Path) -> None:
    """Recompute the manifest's file entries, so only the content checks can complain."""
    manifest = json.loads((root / "manifest.json").read_text())
    for name in ("public.jsonl", "reference.jsonl"):
        data = (root / name).read_bytes()
        manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(),
                                   "bytes": len(data), "records": data.count(b"\n")}
    (root / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, indent=2) + "\n")


def edit_record(root: Path, name: str, line_no: int, **changes: Any) -> dict[str, Any]:
    lines = read_lines(root / name)
    rec = json.loads(lines[line_no - 1])
    rec.update(changes)
    lines[line_no - 1] = json.dumps(rec, sort_keys=True, separators=(",", ":"))
    write_lines(root / name, lines)
    return rec


def first_help_line(root: Path) -> int:
    for n, line in enumerate(read_lines(root / "reference.jsonl"), start=1):
        if json.loads(line)["needs_intervention"]:
            return n
    raise AssertionError("no help episode")


def has(problems: list[str], *needles: str) -> bool:
    return any(all(n in p for n in needles) for p in problems)


# ----------------------------------------------------------------------------- the table
def test_dev_suite_has_100_balanced_episodes() -> None:
    specs = S.suite_specs(DEV)
    assert len(specs) == 100
    fams = Counter(s["family"] for s in specs)
    assert set(fams) == set(FAMILIES)
    assert sum(s["reference"]["needs_intervention"] for s in specs) == 50
    assert sum(fams[f] for f in HELP_FAMILIES) == sum(fams[f] for f in SILENT_FAMILIES) == 50
    # help families evenly; silent families by their shares (twins mirror their help family)
    counts = [fams[f] for f in HELP_FAMILIES]
    assert max(counts) - min(counts) <= 1
    assert {f: fams[f] for f in SILENT_FAMILIES} == S.apportion(50, SILENT_SHARES)
    assert [s["family"] for s in specs] == [S.suite_family(DEV, i) for i in range(100)]
    assert S.suite_info(DEV)["families"] == {f: fams[f] for f in FAMILIES}


def test_test_suite_has_balanced_family_counts() -> None:
    info = S.suite_info(TEST)
    assert info["n"] == 1000
    per_help = 500 / len(HELP_FAMILIES)
    assert all(abs(info["families"][f] - per_help) < 1 for f in HELP_FAMILIES)
    assert {f: info["families"][f] for f in SILENT_FAMILIES} == S.apportion(500, SILENT_SHARES)
    # every help family's twins, together, are about as many as the help family itself
    for twins in TWINS.values():
        assert abs(sum(info["families"][t] for t in twins) - 0.9 * per_help) <= 2
    assert info["help_episodes"] == info["silent_episodes"] == 500


@settings(max_examples=30, deadline=None)
@given(suite=st.sampled_from([DEV, TEST]), data=st.data())
def test_every_pair_holds_one_help_and_one_silent_episode(suite: str, data: st.DataObject) -> None:
    n = S.SUITES[suite]["n"]
    pair = data.draw(st.integers(0, n // 2 - 1))
    fams = [S.suite_family(suite, i) for i in (2 * pair, 2 * pair + 1)]
    assert sum(f in HELP_FAMILIES for f in fams) == 1


def test_apportion_is_exact_and_stable() -> None:
    assert S.apportion(10, {"a": 1, "b": 1, "c": 1}) == {"a": 4, "b": 3, "c": 3}
    assert sum(S.apportion(997, SILENT_SHARES).values()) == 997
    assert S.apportion(0, {"a": 1.0}) == {"a": 0}


def test_family_does_not_follow_the_index() -> None:
    fams = [S.suite_family(TEST, i) for i in range(1000)]
    for period in (2, 4, 7, 8, 11):
        for pos in range(period):
            assert len({fams[i] for i in range(pos, 1000, period)}) > 2
    # help comes first in some pairs and second in others
    firsts = {fams[i] in HELP_FAMILIES for i in range(0, 1000, 2)}
    assert firsts == {True, False}


def test_withdrawn_suites_are_refused_with_the_replacement() -> None:
    for old, new in (("vh-dev-v0", "vh-dev-v5"), ("vh-test-v0", "vh-test-v5")):
        assert old not in S.suite_names()
        with pytest.raises(ValueError, match=f"withdrawn.*{new}"):
            S.suite_episode(old, 0)


def test_ids_and_seeds() -> None:
    spec = S.suite_episode(DEV, 3)
    assert spec["episode_id"] == "vh-dev-v2-0003" == S.suite_episode_id(DEV, 3)
    assert spec["seed"] == S.suite_seed(DEV, 3) == S.SUITES[DEV]["seed_base"] + 3
    seeds = {name: {S.suite_seed(name, i) for i in range(s["n"])} for name, s in S.SUITES.items()}
    assert not seeds[DEV] & seeds[TEST]
    for name, ss in seeds.items():
        assert len(ss) == S.SUITES[name]["n"]
        assert min(ss) >= S.SUITE_SEED_MIN
        assert min(ss) > 2**31 - 1  # above every seed drawn for random (training) episodes
        assert not any(S.is_training_seed(x) for x in ss)
        assert not ss & set(S.TRAINING_SEED_RANGE)
    assert S.is_training_seed(0) and S.is_training_seed(10**6 - 1)
    assert not S.is_training_seed(10**6)


def test_generation_is_deterministic_and_returns_copies() -> None:
    for i in (0, 7, 42, 99):
        spec = S.suite_episode(DEV, i)
        again = generate_episode(S.suite_family(DEV, i), S.suite_seed(DEV, i),
                                 episode_id=S.suite_episode_id(DEV, i),
                                 generator=S.SUITES[DEV]["generator"])
        assert spec == again
    assert S.suite_specs(DEV) == S.suite_specs(DEV)
    spec = S.suite_episode(DEV, 5)
    spec["graph"]["nodes"].clear()
    spec["reference"]["window"] = "tampered"
    assert S.suite_episode(DEV, 5)["graph"]["nodes"]
    assert S.suite_episode(DEV, 5)["reference"]["window"] != "tampered"


def test_unknown_suite_and_bad_index() -> None:
    with pytest.raises(ValueError, match="known suites: vh-dev-v2, vh-test-v2"):
        S.suite_episode("vh-nope-v0", 0)
    with pytest.raises(ValueError, match=r"valid range is 0\.\.99"):
        S.suite_episode(DEV, 100)
    with pytest.raises(ValueError, match=r"valid range is 0\.\.99"):
        S.suite_episode(DEV, -1)
    with pytest.raises(ValueError, match="must be an int"):
        S.suite_episode(DEV, True)
    with pytest.raises(ValueError, match="known suites"):
        S.suite_info("nope")
    with pytest.raises(ValueError, match="known suites"):
        S.suite_references("nope")


def test_suite_generator_version_is_enforced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(S.SUITES, "vh-old-v0", dict(S.SUITES[DEV], name="vh-old-v0",
                                                    generator="mh-gen-0.0"))
    with pytest.raises(S.SuiteVersionError, match="release new suite names"):
        S.suite_episode("vh-old-v0", 0)


def test_suite_references() -> None:
    refs = S.suite_references(DEV)
    assert list(refs) == [f"vh-dev-v2-{i:04d}" for i in range(100)]
    assert refs["vh-dev-v2-0003"] == S.reference_record(S.suite_episode(DEV, 3))
    refs["vh-dev-v2-0003"]["family"] = "tampered"
    assert S.suite_references(DEV)["vh-dev-v2-0003"]["family"] != "tampered"


# ----------------------------------------------------------------------------- records
def test_public_record_reveals_nothing() -> None:
    spec = S.suite_episode(DEV, 11)
    rec = S.public_record(spec)
    assert set(rec) == PUBLIC_KEYS
    assert rec["suite"] == DEV and rec["index"] == 11
    assert rec["people"] == [{"id": a["id"], "name": a["name"], "kind": a["kind"]}
                             for a in sorted(spec["actors"], key=lambda a: a["id"])]
    assert rec["graph"] == S.perceived_graph(spec["graph"]) and rec["robot_id"] == 1
    # nothing hidden in a closed container is listed
    world = World(spec["graph"])
    hidden = {n for n in world.graph.nodes if world.is_hidden(n)}
    listed = {n["id"] for n in rec["graph"]["nodes"]}
    assert hidden and not hidden & listed
    assert listed == set(world.graph.nodes) - hidden
    assert not get_validator("public").is_valid(dict(rec, family=spec["family"]))
    with pytest.raises(ValueError, match="not a suite episode id"):
        S.public_record(generate_episode("routine", 5))


def test_exported_public_file_has_no_forbidden_field(dev_dir: Path) -> None:
    lines = read_lines(dev_dir / "public.jsonl")
    assert len(lines) == 100
    hidden_words = set(FAMILIES) | set(S.FORBIDDEN_PUBLIC_WORDS) | {
        "beliefs", "activities", "onset_tick", "deadline_tick", "focus_actor", "target_object"}
    for line in lines:
        rec = json.loads(line)
        assert set(rec) == PUBLIC_KEYS
        assert not set(rec) & S.FORBIDDEN_PUBLIC_KEYS
        for word in hidden_words:
            assert word not in line, word
        assert f'"seed":{S.suite_seed(DEV, rec["index"])}' not in line


def test_reference_record() -> None:
    spec = S.suite_episode(DEV, 2)
    ref = S.reference_record(spec)
    assert ref["episode_id"] == spec["episode_id"]
    assert ref == spec["reference"]
    assert get_validator("reference").is_valid(ref)


# ----------------------------------------------------------------------------- export / validate
def test_export_then_validate_has_no_problems(dev_dir: Path) -> None:
    assert S.validate_suite_dir(dev_dir) == []
    manifest = json.loads((dev_dir / "manifest.json").read_text())
    assert manifest["suite"] == DEV and manifest["episodes"] == 100
    assert manifest["help_episodes"] == manifest["silent_episodes"] == 50
    assert manifest["families"] == S.suite_info(DEV)["families"]
    for name in ("public.jsonl", "reference.jsonl"):
        data = (dev_dir / name).read_bytes()
        assert manifest["files"][name]["sha256"] == hashlib.sha256(data).hexdigest()


def test_export_is_byte_deterministic(dev_dir: Path, tmp_path: Path) -> None:
    again = S.export_suite(DEV, tmp_path / "again")
    for name in ("public.jsonl", "reference.jsonl", "manifest.json"):
        assert (again / name).read_bytes() == (dev_dir / name).read_bytes()


def test_pinned_dev_digests(dev_dir: Path) -> None:
    # If this fails, episode generation changed: bump the suite version / GENERATOR_VERSION.
    pinned = S.pinned_digests(DEV)
    assert pinned is not None and set(pinned) == {"public.jsonl", "reference.jsonl"}
    for name, digest in pinned.items():
        assert hashlib.sha256((dev_dir / name).read_bytes()).hexdigest() == digest
    assert S.pinned_digests(TEST) is not None


def test_digests_ship_with_the_package() -> None:
    import importlib.resources

    data = importlib.resources.files("mindhelper_env.scenarios").joinpath("suites/releases.json")
    table = {e["name"]: e for e in json.loads(data.read_text())["releases"]}
    assert set(S.suite_names()) <= set(table)
    assert all(table[n]["status"] == "current" for n in S.suite_names())


def test_rebuilt_suite_that_differs_from_the_published_one_is_reported(fresh: Path) -> None:
    edit_record(fresh, "public.jsonl", 1, horizon=149)
    resign(fresh)  # a self-consistent export, but not the published suite
    problems = S.validate_suite_dir(fresh, replay=False)
    assert has(problems, "public.jsonl", "not the published suite")
    assert not has(problems, "reference.jsonl", "not the published suite")


def test_tampered_byte_is_a_sha256_problem(fresh: Path) -> None:
    path = fresh / "public.jsonl"
    data = bytearray(path.read_bytes())
    pos = data.index(b'"horizon":') + len(b'"horizon":')
    data[pos] = ord("9") if data[pos] != ord("9") else ord("8")
    path.write_bytes(bytes(data))
    problems = S.validate_suite_dir(fresh, replay=False)
    assert has(problems, "public.jsonl", "sha256")
    assert not has(problems, "reference.jsonl", "sha256")


def test_missing_reference_file(fresh: Path) -> None:
    (fresh / "reference.jsonl").unlink()
    problems = S.validate_suite_dir(fresh, replay=False)
    assert "reference.jsonl: missing" in problems


def test_missing_manifest(fresh: Path) -> None:
    (fresh / "manifest.json").unlink()
    assert "manifest.json: missing" in S.validate_suite_dir(fresh, replay=False)


def test_corrupt_line_names_file_and_line(fresh: Path) -> None:
    lines = read_lines(fresh / "public.jsonl")
    lines[16] = lines[16][: len(lines[16]) // 2]  # truncated line 17
    write_lines(fresh / "public.jsonl", lines)
    problems = S.validate_suite_dir(fresh, replay=False)
    assert any(p.startswith("public.jsonl:17: invalid JSON (") for p in problems), problems
    # the episode lost its public record, so closure complains too
    assert has(problems, "reference.jsonl:17", "no public record")


def test_duplicated_id(fresh: Path) -> None:
    lines = read_lines(fresh / "reference.jsonl")
    write_lines(fresh / "reference.jsonl", lines + [lines[4]])
    resign(fresh)
    problems = S.validate_suite_dir(fresh, replay=False)
    assert has(problems, "reference.jsonl:101", "duplicate episode_id", "line 5")


def test_public_record_with_family_is_a_problem(fresh: Path) -> None:
    edit_record(fresh, "public.jsonl", 3, family="routine")
    resign(fresh)
    problems = S.validate_suite_dir(fresh, replay=False)
    assert has(problems, "public.jsonl:3", "forbidden field 'family'")


def test_nested_hidden_field_is_a_problem(fresh: Path) -> None:
    lines = read_lines(fresh / "public.jsonl")
    rec = json.loads(lines[0])
    rec["graph"]["nodes"][0]["mental_state"] = {"type": "none"}
    lines[0] = json.dumps(rec, sort_keys=True, separators=(",", ":"))
    write_lines(fresh / "public.jsonl", lines)
    resign(fresh)
    problems = S.validate_suite_dir(fresh, replay=False)
    assert has(problems, "public.jsonl:1", "forbidden field 'mental_state'")


def test_id_closure(fresh: Path) -> None:
    lines = read_lines(fresh / "public.jsonl")
    write_lines(fresh / "public.jsonl", lines[:-1])
    resign(fresh)
    problems = S.validate_suite_dir(fresh, replay=False)
    assert has(problems, "reference.jsonl:100", "no public record")
    assert has(problems, "public.jsonl", "1 episode(s) of vh-dev-v2 missing", "99")


def test_bad_family_and_inconsistent_need(fresh: Path) -> None:
    n = first_help_line(fresh)
    other = n % 100 + 1
    edit_record(fresh, "reference.jsonl", other, family="teleport")
    edit_record(fresh, "reference.jsonl", n, family="routine")
    resign(fresh)
    problems = S.validate_suite_dir(fresh, replay=False)
    assert has(problems, f"reference.jsonl:{other}", "schema", "teleport")
    assert has(problems, f"reference.jsonl:{n}", "needs_intervention")


def test_window_outside_horizon(fresh: Path) -> None:
    n = first_help_line(fresh)
    edit_record(fresh, "reference.jsonl", n, window={"onset_tick": 5, "deadline_tick": 10_000})
    resign(fresh)
    problems = S.validate_suite_dir(fresh, replay=False)
    assert has(problems, f"reference.jsonl:{n}", "window", "horizon")


def test_unparsable_reference_program(fresh: Path) -> None:
    n = first_help_line(fresh)
    edit_record(fresh, "reference.jsonl", n, reference_actions=["[fly] <moon> (1)"])
    resign(fresh)
    problems = S.validate_suite_dir(fresh, replay=False)
    assert has(problems, f"reference.jsonl:{n}", "does not parse")


def test_replay_rejects_a_program_that_does_not_help(fresh: Path) -> None:
    n = first_help_line(fresh)
    rec = json.loads(read_lines(fresh / "reference.jsonl")[n - 1])
    edit_record(fresh, "reference.jsonl", n, reference_actions=rec["reference_actions"][:1])
    resign(fresh)
    problems = S.validate_suite_dir(fresh)
    assert has(problems, f"reference.jsonl:{n}", "replay", "does not make the focus person succeed")
    assert has(problems, f"reference.jsonl:{n}", "differs from the rebuilt ground truth",
               "reference_actions")
    # without replay, only the published digest catches the change
    quick = S.validate_suite_dir(fresh, replay=False)
    assert len(quick) == 1 and "not the published suite" in quick[0]


def test_generator_mismatch_is_reported(fresh: Path) -> None:
    manifest = json.loads((fresh / "manifest.json").read_text())
    manifest["generator"] = "mh-gen-9.9"
    (fresh / "manifest.json").write_text(json.dumps(manifest))
    problems = S.validate_suite_dir(fresh)
    assert has(problems, "manifest.json", "generator", "mh-gen-9.9")


def test_bad_paths_raise_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a directory"):
        S.validate_suite_dir(tmp_path / "nope")
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        S.export_suite(DEV, afile)
    with pytest.raises(ValueError, match="known suites"):
        S.export_suite("nope", tmp_path / "out")


# ----------------------------------------------------------------------------- JSONL / results
def test_load_jsonl(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text('{"a":1}\n{"b":2}\n')
    assert S.load_jsonl(good) == [{"a": 1}, {"b": 2}]
    cases = {
        '{"a":1}\n{"b":\n': r":2: invalid JSON",
        '{"a":1}\n\n{"b":2}\n': r":2: empty line",
        '[1,2]\n': r":1: expected a JSON object",
        '{"a":NaN}\n': r":1: invalid JSON",
        '{"a":1,"a":2}\n': r":1: invalid JSON \(duplicate key 'a'\)",
    }
    for k, (text, pattern) in enumerate(cases.items()):
        path = tmp_path / f"bad{k}.jsonl"
        path.write_text(text)
        with pytest.raises(ValueError, match=f"bad{k}.jsonl{pattern}"):
            S.load_jsonl(path)
    with pytest.raises(ValueError, match="cannot read"):
        S.load_jsonl(tmp_path / "missing.jsonl")


def good_result() -> dict[str, Any]:
    return {
        "episode_id": "vh-dev-v2-0000", "agent": "oracle", "suite": DEV,
        "actions": [{"tick": 3, "program": "[walk] <fridge> (108)"}],
        "executed": [{"tick": 4, "line": "[walk] <fridge> (108)", "ok": True, "reason": None}],
        "focus_success": True, "harm": False, "ticks": 20, "steps": 5,
        "usage": {"model_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                  "seconds": 0.01, "decisions": 5, "fallbacks": 0},
        "terminated": True, "truncated": False,
        "family": "routine", "trigger_ops": [{"predicted": "noop", "label": "noop"}],
    }


def test_validate_result_record() -> None:
    assert S.validate_result_record(good_result()) == []
    rec = good_result()
    del rec["harm"]
    assert any("'harm' is a required property" in p for p in S.validate_result_record(rec))
    rec = good_result()
    rec["executed"][0]["ok"] = "yes"
    assert any(p.startswith("/executed/0/ok") for p in S.validate_result_record(rec))
    rec = good_result()
    rec["usage"]["prompt_tokens"] = -1
    assert any(p.startswith("/usage/prompt_tokens") for p in S.validate_result_record(rec))
    assert S.validate_result_record([]) != []


# ----------------------------------------------------------------------------- schemas
def test_schemas_load_and_match_enums() -> None:
    for name in SCHEMA_NAMES:
        schema = load_schema(name)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert load_schema("reference")["properties"]["family"]["enum"] == list(FAMILIES)
    assert load_schema("manifest")["properties"]["families"]["propertyNames"]["enum"] == list(
        FAMILIES)
    kinds = load_schema("public")["properties"]["people"]["items"]["properties"]["kind"]["enum"]
    assert sorted(kinds) == sorted(ACTOR_KINDS)
    with pytest.raises(ValueError, match="unknown schema"):
        load_schema("nope")
