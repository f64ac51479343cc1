"""Frozen suites: the release ledger, a fake release, withdrawn names refused everywhere with
their replacement, every current suite regenerating to its released digests, the ledger
append-only; env ids (retired ids refused with a pointer) and the package version."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import mindhelper_env
from mindhelper_env.cli.main import main
from mindhelper_env.envs import registration
from mindhelper_env.scenarios import releases, shipped, spec
from mindhelper_env.scenarios import suites as S
from tests.conftest import require_tdw

# A frozen copy of the ledger's entries as released. The ledger may only grow, and an entry
# may only change by a withdrawal (status, replaced_by, note): any other edit or a removal
# fails test_ledger_is_append_only. Append new releases here when they are made. The v4
# entries' spec_sha256 was recorded after their release (computed from mh-gen-3.1, their
# exports checked against their digests first): frozen from then on. The v5 entries
# (mh-gen-3.2) recorded theirs at release.
FROZEN: list[dict[str, Any]] = [
    {"name": "vh-dev-v0", "generator": "mh-gen-0.1", "episodes": 100,
     "seed_base": 3_000_000_000, "house": None, "released": "2026-11-30",
     "public_sha256": None, "reference_sha256": None},
    {"name": "vh-test-v0", "generator": "mh-gen-0.1", "episodes": 1000,
     "seed_base": 4_000_000_000, "house": None, "released": "2026-11-30",
     "public_sha256": None, "reference_sha256": None},
    {"name": "vh-dev-v1", "generator": "mh-gen-1.0", "episodes": 100,
     "seed_base": 5_000_000_000, "house": None, "released": "2026-11-30",
     "public_sha256": "8d59ae782e4b099b78401e19683ebdfc0e461e0b405d9f2a39b4a3522737abe7",
     "reference_sha256": "0bde8c5257404fd91585544413cce1397cec6acb098f806d68bdcc6d96e457c7"},
    {"name": "vh-test-v1", "generator": "mh-gen-1.0", "episodes": 1000,
     "seed_base": 6_000_000_000, "house": None, "released": "2026-11-30",
     "public_sha256": "51a084abe1ec4f3421ae4b711708e79d1974d6e32ee9956c1b093794abe94c44",
     "reference_sha256": "bf30d304b5cf89bfd07c16c72fdd6262fa59141dca8420d0c909e1564c406bec"},
    {"name": "tdw-dev-v1", "generator": "mh-gen-1.0", "episodes": 100,
     "seed_base": 7_000_000_000, "house": "tdw", "released": "2026-11-30",
     "public_sha256": "bed347fc8eed00f79bdc48dcd510f497e79c42046a06a88f1c59d5aa84ff2702",
     "reference_sha256": "a3bb455356b50c2f2a96a5b2aa77a43800b1ca3d433b6eb5305e48e8fef9ee39"},
    {"name": "tdw-test-v1", "generator": "mh-gen-1.0", "episodes": 1000,
     "seed_base": 8_000_000_000, "house": "tdw", "released": "2026-11-30",
     "public_sha256": "f17c2ca380d554f13cd4de949f8d06e66388683613bc9a187ce5081bacd3ce62",
     "reference_sha256": "4528c9538ac9d05c48c6cbe64f23794eaa654f2409ab5bcc8f87fbe48aa80a83"},
    {"name": "vh-scene1-dev-v1", "generator": "mh-gen-1.0", "episodes": 100,
     "seed_base": 9_000_000_000, "house": "virtualhome:scene1", "released": "2026-11-30",
     "public_sha256": "d0d8ebbe3633d69ddb3ce68b3d714833920d31663a327249a23b58b59cecdb57",
     "reference_sha256": "b35dfc19add8cf911140fa8b8672597e895986bf51bf6f91f342e6ab84169a57"},
    {"name": "vh-dev-v2", "generator": "mh-gen-2.5", "episodes": 100,
     "seed_base": 10_000_000_000, "house": None, "released": "2026-12-02",
     "public_sha256": "b87187ece87f33f54d507dd959556fc2851d8bc8a2abc1e41f40f0616a4fe4a6",
     "reference_sha256": "8f870543d5f1f7f9792f4b25099517fd59f87ed713cc8b811dd74cc2b852f358"},
    {"name": "vh-test-v2", "generator": "mh-gen-2.5", "episodes": 1000,
     "seed_base": 11_000_000_000, "house": None, "released": "2026-12-02",
     "public_sha256": "f406c858f69dd190e69ca4ba5764d4897721c6a03eda8ce9b80ccaddf8723f9f",
     "reference_sha256": "37133a9acb4c473b3e4be3dcc2ba9ccc172ba5cff1cf992d804e94a2c3975d7d"},
    {"name": "tdw-dev-v2", "generator": "mh-gen-2.5", "episodes": 100,
     "seed_base": 12_000_000_000, "house": "tdw", "released": "2026-12-02",
     "public_sha256": "6ee2e678ac20078c1a56648ecb2795c416c63eb22d89416a84ef8f9dce5eaa2e",
     "reference_sha256": "7b8d7f59d14631483b9113650fe318864c5d61e4ef499778ed30c00031bc99a4"},
    {"name": "tdw-test-v2", "generator": "mh-gen-2.5", "episodes": 1000,
     "seed_base": 13_000_000_000, "house": "tdw", "released": "2026-12-02",
     "public_sha256": "c20abff2a91921e61ee284fda5eb65df966934025464fda1a0d0cef6b3025f94",
     "reference_sha256": "cb77dcf6da03f27f13a2f8f2df4fed80df5a923c0a0793c5502ae5a550379ddb"},
    {"name": "vh-scene1-dev-v2", "generator": "mh-gen-2.5", "episodes": 100,
     "seed_base": 14_000_000_000, "house": "virtualhome:scene1", "released": "2026-12-02",
     "public_sha256": "d4e479a518c75c7b87f5d2711fc7456351976bfaefc6ba4d48c7246c52c70743",
     "reference_sha256": "f88dcd8079c9aa221b8c8bf3ae35e7f5b5779c21cc6a2d8e08b509effd671d57"},
    {"name": "vh-dev-v3", "generator": "mh-gen-3.0", "episodes": 100,
     "seed_base": 15_000_000_000, "house": None, "released": "2026-12-06",
     "public_sha256": "3d9ddc47ac234d18a99812ef6f360be8e743a317c5a711daba5aeee4a3f886b7",
     "reference_sha256": "791040f86991ec42b29d1b5e776d737d05f1c57b17abf86f590efb26b8b0bbc9"},
    {"name": "vh-test-v3", "generator": "mh-gen-3.0", "episodes": 1000,
     "seed_base": 16_000_000_000, "house": None, "released": "2026-12-06",
     "public_sha256": "d16f72b0fb6f693224eeef3d5b57d26493584bd175caadafc920c01531bf6a77",
     "reference_sha256": "3837b0ea3e6a44238b5d1eecd8cef85d5a6bd1671d7d8405c0457a79109d8e8a"},
    {"name": "tdw-dev-v3", "generator": "mh-gen-3.0", "episodes": 100,
     "seed_base": 17_000_000_000, "house": "tdw", "released": "2026-12-06",
     "public_sha256": "7de5f04bd90f0900747a16fadbb00a0e7e9c7302eaebc12e16513fabcf5143d6",
     "reference_sha256": "b591316ebee2c62cc92b1746c4ca0615a814ec3fb121baf00a564d8b19357072"},
    {"name": "tdw-test-v3", "generator": "mh-gen-3.0", "episodes": 1000,
     "seed_base": 18_000_000_000, "house": "tdw", "released": "2026-12-06",
     "public_sha256": "39633e7a4ab3edae41957827f4d71e07862e0ab9fc160dcacff2b73b4aa462e2",
     "reference_sha256": "eece6eebc2144b349b769bfded93e57cc5248a5ea8d62180fabdfe2cb1f76a8b"},
    {"name": "vh-scene1-dev-v3", "generator": "mh-gen-3.0", "episodes": 100,
     "seed_base": 19_000_000_000, "house": "virtualhome:scene1", "released": "2026-12-06",
     "public_sha256": "2370310082ec8cadb8a3cded099fbdde1376dc5eae15b95ec1e27d595810b91f",
     "reference_sha256": "aaf8cee108297bc3096d8a629973d0ddcc3f1e393c4a523cbd672600d88d5730"},
    {"name": "vh-dev-v4", "generator": "mh-gen-3.1", "episodes": 100,
     "seed_base": 20_000_000_000, "house": None, "released": "2026-12-06",
     "public_sha256": "30688458496bccec5e9ed764f4ad4b11b0f517f8971ba27da1484535b516b7f6",
     "reference_sha256": "397a37b065d96899600a48c077a098380da682ce7f79448c184eb3aebdd3bbb4",
     "spec_sha256": "24cb64f4f9bdd1ef1db928206e64af1c845df8f61129f35c60ce76611615f2e0"},
    {"name": "vh-test-v4", "generator": "mh-gen-3.1", "episodes": 1000,
     "seed_base": 21_000_000_000, "house": None, "released": "2026-12-06",
     "public_sha256": "9408ec7bf18f6d2f9c7e7f74ed054a63a0f655b9f86022afdd2c19ca2047a66c",
     "reference_sha256": "9ad4cbc80f0b7666bc06fc913edf3c9f946cc0bdbc1712a2fffc75726a6539fa",
     "spec_sha256": "16040a9d06eabc71866f6ffe55548e6ea8f254738d4a034a6636a7517b0cfd22"},
    {"name": "tdw-dev-v4", "generator": "mh-gen-3.1", "episodes": 100,
     "seed_base": 22_000_000_000, "house": "tdw", "released": "2026-12-06",
     "public_sha256": "9ccfa3b432d8486a87e1c387b3ad26e938919aa23f1ea2e725b21a943c04aaae",
     "reference_sha256": "c93f86c2f21f2965518b6b1a9f7efcd6cab4ec49e87844fb21c2dde3e51f9a55",
     "spec_sha256": "aa6fb2d76327296223976d1822b3f4fe0695e718e0e1c93c237c03193003f53c"},
    {"name": "tdw-test-v4", "generator": "mh-gen-3.1", "episodes": 1000,
     "seed_base": 23_000_000_000, "house": "tdw", "released": "2026-12-06",
     "public_sha256": "6a790074ae91d020d095c190c571aa3c4313c0d0a768bdb6dead53a4b1009ee1",
     "reference_sha256": "0f1e1c4bf7f678a0315f689aca148d0a025c5a95c9d6d937d4f15ebb11908980",
     "spec_sha256": "29e8fd1e515cbc730c9bf841f18d4966d04a9c9aee0c2dd27d12f378279b7de8"},
    {"name": "vh-scene1-dev-v4", "generator": "mh-gen-3.1", "episodes": 100,
     "seed_base": 24_000_000_000, "house": "virtualhome:scene1", "released": "2026-12-06",
     "public_sha256": "6e393ae84e9d7e511723d52fe6d3f11f7019cd1a7d7c73e3a48069e9feb37f9d",
     "reference_sha256": "19973121153c7b91bbbfdbb9030215285f9fe99f73dc3063658806644e149011",
     "spec_sha256": "905d67d298ead008499e102e91c451df6fd0422f575e23b1f9ca632387fd507c"},
    {"name": "vh-dev-v5", "generator": "mh-gen-3.2", "episodes": 100,
     "seed_base": 25_000_000_000, "house": None, "released": "2026-12-07",
     "public_sha256": "98ab986572a9e1ed5f2d26286793a6f960bfec806bd25e82470673a31c48b0d3",
     "reference_sha256": "7e48793c66c050058827d989b74866791a8fc9fdfdad0876abeb5cef6c4dc9ae",
     "spec_sha256": "8b840651cd532b264acebfc3fb75a0d3e1c818f368ce38f05b134f4586a63729"},
    {"name": "vh-test-v5", "generator": "mh-gen-3.2", "episodes": 1000,
     "seed_base": 26_000_000_000, "house": None, "released": "2026-12-07",
     "public_sha256": "570db15e7cd37bca4c6f2077088d087dd65a8f5f1fe8b5f5a8ad2173adb836dd",
     "reference_sha256": "c7ee4b1fe5e0faef23030844a8563d43af641ed973f765cf9f993dd50dc7c13d",
     "spec_sha256": "4a8163a9cd5f8ad9e75d786346e75ff57ae6e59029ae5e636cf44ba5648f1316"},
    {"name": "tdw-dev-v5", "generator": "mh-gen-3.2", "episodes": 100,
     "seed_base": 27_000_000_000, "house": "tdw", "released": "2026-12-07",
     "public_sha256": "9f5c113cf35fe6d01a3d806dcaa761243f6680696fee589809845085ad08b6d5",
     "reference_sha256": "07b34caf38f361bf997663a40aba90dc1c0211982318329c85335dee040da2e2",
     "spec_sha256": "e69d475169ae356b08bcdc397ceeb1ebde20b53836a0d3b9940891154d4458ae"},
    {"name": "tdw-test-v5", "generator": "mh-gen-3.2", "episodes": 1000,
     "seed_base": 28_000_000_000, "house": "tdw", "released": "2026-12-07",
     "public_sha256": "2744592c437b70aa281114d02a516845e5fad278afe60260bdac30fbd39a7a42",
     "reference_sha256": "30d1a07f751b18fd71d7ff097e2d0a3bc6d30b3e0a62463da6664903e62e6c58",
     "spec_sha256": "6c20af236ea007b70a25d9004333d3bc9dbc902fb40809c5a60e90b10445136c"},
    {"name": "vh-scene1-dev-v5", "generator": "mh-gen-3.2", "episodes": 100,
     "seed_base": 29_000_000_000, "house": "virtualhome:scene1", "released": "2026-12-07",
     "public_sha256": "66c7b10ab041410ffa0c86bf7711cf03ecbc2a3e7ce80b5572edaa337fa76547",
     "reference_sha256": "473086778fdfa576e3ae2a2e422d7dd9e4ce25f4014ac021c27b420f706a8005",
     "spec_sha256": "5c7ce538cce8466cf4db993871ee82634493f3a629877e55089dcc10e7ebe7b4"},
]
#: What a withdrawal may change.
WITHDRAWAL_FIELDS = {"status", "replaced_by", "note"}

CURRENT = [r.name for r in releases.releases() if r.current]
DEV_SUITES = [n for n in CURRENT if releases.release_of(n).episodes <= 100]  # type: ignore[union-attr]
TEST_SUITES = [n for n in CURRENT if n not in DEV_SUITES]


# ----------------------------------------------------------------------------- the ledger
def test_ledger_is_append_only() -> None:
    raw = json.loads(releases.LEDGER_FILE.read_text())["releases"]
    by_name = {e["name"]: e for e in raw}
    assert [e["name"] for e in raw[:len(FROZEN)]] == [e["name"] for e in FROZEN], \
        "released entries were removed or reordered"
    for frozen in FROZEN:
        entry = by_name[frozen["name"]]
        changed = {k for k in frozen if entry.get(k) != frozen[k]}
        assert not changed, f"{frozen['name']}: released fields edited: {sorted(changed)}"
        assert set(entry) - set(frozen) <= WITHDRAWAL_FIELDS


def test_ledger_rejects_an_edited_frozen_field(tmp_path: Path) -> None:
    # the check above can fail: an edited digest is caught
    raw = json.loads(releases.LEDGER_FILE.read_text())
    raw["releases"][7]["public_sha256"] = "0" * 64
    entry = raw["releases"][7]
    assert {k for k in FROZEN[7] if entry.get(k) != FROZEN[7][k]} == {"public_sha256"}


def test_every_suite_matches_its_release() -> None:
    for name, s in S.SUITES.items():
        rel = releases.release_of(name)
        assert rel is not None and rel.current, name
        assert (rel.generator, rel.episodes, rel.seed_base, rel.house) == \
            (s["generator"], s["n"], s["seed_base"], s.get("house")), name
    for rel in releases.releases():
        if not rel.current:
            assert rel.name in S.WITHDRAWN and rel.replaced_by
            assert all(releases.release_of(n) is not None for n in rel.replaced_by)


def test_v2_release_dates_follow_the_git_history_of_the_digests() -> None:
    # mh-gen-2.5 was pinned on 2026-12-02 (38eaa2e); v1 on 2026-11-30; v3, v4 on 2026-12-06;
    # v5 on 2026-12-07
    dates = {n: releases.release_of(n).released for n in S.SUITES}  # type: ignore[union-attr]
    assert set(dates.values()) == {"2026-12-02", "2026-12-06", "2026-12-07"}
    assert {n for n, d in dates.items() if d == "2026-12-07"} == \
        {n for n in S.SUITES if n.endswith("-v5")}
    assert releases.release_of("vh-dev-v1").released == "2026-11-30"  # type: ignore[union-attr]


def test_a_malformed_ledger_does_not_load(tmp_path: Path) -> None:
    raw = json.loads(releases.LEDGER_FILE.read_text())
    twice = dict(raw, releases=[*raw["releases"], raw["releases"][-1]])
    with pytest.raises(ValueError, match="released twice"):
        releases._parse(twice, "ledger")
    orphan = dict(raw, releases=[dict(raw["releases"][0], replaced_by=["vh-dev-v9"])])
    with pytest.raises(ValueError, match="never released"):
        releases._parse(orphan, "ledger")
    path = tmp_path / "releases.json"
    path.write_text(json.dumps(raw))
    rel = releases.release_of("vh-dev-v2")
    assert rel is not None
    with pytest.raises(ValueError, match="already released"):
        releases.append_release(rel, path)


# ------------------------------------------------------------------ every suite regenerates
def _require_houses(name: str) -> None:
    """A suite set in real houses needs their data: the tdw extra, or virtualhome-eval
    (skipped without them; CI sets MINDHELPER_REQUIRE_TDW/_VH, so it never skips)."""
    house = S.SUITES[name].get("house")
    if house == "tdw":
        require_tdw()
    elif isinstance(house, str) and house.startswith("virtualhome:"):
        if os.environ.get("MINDHELPER_REQUIRE_VH") == "1":
            importlib.import_module("virtualhome_eval")
        else:
            pytest.importorskip("virtualhome_eval", reason="needs virtualhome-eval: pip "
                                "install --no-deps virtualhome-eval==0.1.1")


def _check_releases() -> Any:
    """tools/check-releases.py, the release script that regenerates suites whole."""
    path = Path(__file__).resolve().parents[1] / "tools" / "check-releases.py"
    loader = importlib.util.spec_from_file_location("check_releases", path)
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


CHECK_RELEASES = _check_releases()


def _export_digests(name: str, out: Path) -> dict[str, str]:
    """The digests of ``name`` exported from the generator (the shipped files turned off:
    they are checked against the generator in test_releases_shipped.py)."""
    _require_houses(name)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(shipped.OFF_VARIABLE, "1")
        S._episode_json.cache_clear()
        try:
            folder = S.export_suite(name, out / name)
        finally:
            S._episode_json.cache_clear()
    return {f: hashlib.sha256((folder / f).read_bytes()).hexdigest()
            for f in (S.PUBLIC_FILE, S.REFERENCE_FILE)}


@pytest.mark.parametrize("name", DEV_SUITES)
def test_dev_suite_regenerates_to_its_released_digests(name: str, tmp_path: Path) -> None:
    """100 episodes, whole: the release script's check (exported files and, v4 on, every
    episode spec against the ledger)."""
    _require_houses(name)
    assert CHECK_RELEASES.check_suite(name, tmp_path) == []


def test_the_release_script_reports_a_suite_that_differs(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """tools/check-releases.py exits 1 and names each file and both digests when a
    regenerated suite differs from its ledger entry (here vh-dev-v5 cut to its first three
    episodes), 2 for an unknown name."""
    rel = releases.release_of("vh-dev-v5")
    assert rel is not None
    monkeypatch.setitem(S.SUITES, "vh-dev-v5", dict(S.SUITES["vh-dev-v5"], n=3))
    assert CHECK_RELEASES.main(["vh-dev-v5"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL vh-dev-v5 ("), out
    for label, want in (("public.jsonl", rel.public_sha256),
                        ("reference.jsonl", rel.reference_sha256),
                        ("the episode specs", rel.spec_sha256)):
        assert re.search(rf"vh-dev-v5: {label} ha(s|ve) sha256 [0-9a-f]{{64}}, the release "
                         rf"{want}$", out, re.M), (label, out)
    assert out.rstrip().endswith("0 of 1 suites reproduce their release")
    assert CHECK_RELEASES.main(["vh-dev-v9"]) == 2
    assert "unknown or withdrawn suite(s): vh-dev-v9" in capsys.readouterr().err


#: The seed of the episodes the tests regenerate from each 1,000-episode suite: drawn anew
#: for every run (so that runs add up to more of each suite), or set to replay one.
SAMPLE_SEED = int(os.environ.get("MINDHELPER_RELEASE_SAMPLE_SEED")
                  or random.SystemRandom().randrange(2**32))


def _sample(name: str, lines: tuple[str, ...], seed: int) -> list[int]:
    """The first and last episode of ``name`` and one of each of its families, drawn with
    ``seed`` (stratified: every family's generation is exercised)."""
    by_family: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        by_family.setdefault(json.loads(line)["family"], []).append(i)
    rng = random.Random(f"{seed}:{name}")
    picks = {0, len(lines) - 1} | {rng.choice(ix) for _f, ix in sorted(by_family.items())}
    return sorted(picks)


@pytest.mark.parametrize("name", TEST_SUITES)
def test_test_suite_sample_regenerates_to_its_release(name: str) -> None:
    """1,000 episodes: a sample (``_sample``) regenerated from the generator equals, line for
    line, the released files that ship with the package: the reference lines (their file
    hashes to the ledger's ``reference_sha256``) and, where every spec ships, the spec lines
    (their file hashes to the ledger's ``spec_sha256``; the public file is checked whole
    from them). tools/check-releases.py regenerates the suites whole."""
    _require_houses(name)
    rel = releases.release_of(name)
    assert rel is not None
    refs = shipped.reference_lines(name)  # None unless the file is the ledger's
    assert refs is not None and len(refs) == rel.episodes, name
    specs = shipped.episode_lines(name)
    if specs is not None:
        # the shipped specs are the released ones, all of them; so is the public file
        assert hashlib.sha256("".join(x + "\n" for x in specs).encode()).hexdigest() \
            == rel.spec_sha256
        public = "".join(S._dumps(S.public_record(json.loads(x), suite=name, index=i)) + "\n"
                         for i, x in enumerate(specs))
        assert hashlib.sha256(public.encode()).hexdigest() == rel.public_sha256
    indices = _sample(name, refs, SAMPLE_SEED)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(shipped.OFF_VARIABLE, "1")
        S._episode_json.cache_clear()
        try:
            generated = {i: S._episode_json(name, i) for i in indices}
        finally:
            S._episode_json.cache_clear()
    replay = f"(MINDHELPER_RELEASE_SAMPLE_SEED={SAMPLE_SEED} draws this sample again)"
    for i, text in generated.items():
        spec_i = json.loads(text)
        assert S._dumps(S.reference_record(spec_i)) == refs[i], f"{name} episode {i} {replay}"
        if specs is not None:
            assert text == specs[i], f"{name} episode {i} {replay}"


def test_the_sample_covers_every_family_and_both_ends() -> None:
    name = "vh-test-v5"
    refs = shipped.reference_lines(name)
    assert refs is not None
    families = {json.loads(x)["family"] for x in refs}
    a, b = _sample(name, refs, 1), _sample(name, refs, 2)
    for picks in (a, b):
        assert picks[0] == 0 and picks[-1] == len(refs) - 1
        assert {json.loads(refs[i])["family"] for i in picks} == families
        assert len(picks) <= len(families) + 2
    assert a != b and a == _sample(name, refs, 1)  # another seed, another sample; replayable


# ------------------------------------------------------------ digests that pin whole episodes
def test_every_release_from_v4_on_pins_its_whole_episodes() -> None:
    pinned = {r.name for r in releases.releases() if r.spec_sha256}
    later = {r.name for r in releases.releases()
             if r.generator not in ("mh-gen-0.1", "mh-gen-1.0", spec.GENERATOR_V2,
                                    spec.GENERATOR_V3)}
    assert later and later <= pinned, sorted(later - pinned)


@pytest.fixture()
def fresh_generation(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Episodes generated, not read from the shipped files, and not cached."""
    from mindhelper_env.scenarios import shipped

    monkeypatch.setenv(shipped.OFF_VARIABLE, "1")
    S._episode_json.cache_clear()
    yield
    S._episode_json.cache_clear()


def _slice_digests(name: str, n: int) -> tuple[str, str, str]:
    public = "".join(S._dumps(S.public_record(S.suite_episode(name, i))) + "\n"
                     for i in range(n))
    reference = "".join(S._dumps(S.reference_record(S.suite_episode(name, i))) + "\n"
                        for i in range(n))
    return (hashlib.sha256(public.encode()).hexdigest(),
            hashlib.sha256(reference.encode()).hexdigest(), S.spec_digest(name, n))


def test_a_schedule_only_change_changes_the_spec_digest(
        fresh_generation: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from mindhelper_env.scenarios import twins

    name, n = "vh-dev-v4", 12
    before = _slice_digests(name, n)
    assert before[2] == S.spec_digest(name, n)  # deterministic
    # a twin's pause after the look, one tick longer: only schedules change
    lo, hi = twins.SELF_RESOLVE_DELAY
    monkeypatch.setattr(twins, "SELF_RESOLVE_DELAY", (lo + 1, hi + 1))
    S._episode_json.cache_clear()
    after = _slice_digests(name, n)
    assert after[:2] == before[:2], "the exported files were expected to stay the same"
    assert after[2] != before[2], "a schedule-only change kept the spec digest"


def test_a_spec_digest_is_checked_and_recorded_once(tmp_path: Path) -> None:
    raw = json.loads(releases.LEDGER_FILE.read_text())
    bad = dict(raw, releases=[dict(raw["releases"][7], spec_sha256="not a digest")])
    with pytest.raises(ValueError, match="spec_sha256"):
        releases._parse(bad, "ledger")
    path = tmp_path / "releases.json"
    path.write_text(json.dumps(raw))
    releases.record_spec_digest("vh-dev-v2", "c" * 64, path)
    loaded = releases._parse(json.loads(path.read_text()), "ledger")
    assert loaded["vh-dev-v2"].spec_sha256 == "c" * 64
    assert loaded["vh-dev-v2"].to_dict()["spec_sha256"] == "c" * 64
    assert "spec_sha256" not in loaded["vh-dev-v3"].to_dict()  # unset: not written
    with pytest.raises(ValueError, match="already records"):
        releases.record_spec_digest("vh-dev-v2", "d" * 64, path)


# ----------------------------------------------------------------------- a fake release
@pytest.fixture()
def dev_records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mindhelper_env.evaluation import evaluate

    out = tmp_path_factory.mktemp("dev-run")
    evaluate("vh-dev-v2", ["silent"], out, limit=2, progress=False, plots=False, timing=False)
    return out


@pytest.fixture()
def new_generator(monkeypatch: pytest.MonkeyPatch) -> str:
    """A code change with a new generator version, before any new suite is released."""
    from mindhelper_env.scenarios import generator

    new = "mh-gen-9.0"
    monkeypatch.setattr(spec, "GENERATOR_VERSION", new)
    monkeypatch.setattr(S, "GENERATORS", (new,))
    # where the code builds several generators, the changed one replaces the released one
    monkeypatch.setattr(generator, "GENERATORS", (new,), raising=False)
    monkeypatch.setattr(generator, "GENERATOR_VERSION", new)
    return new


@pytest.fixture()
def released_v9(new_generator: str, monkeypatch: pytest.MonkeyPatch,
                tmp_path: Path) -> str:
    """The new generator released as vh-dev-v9, vh-dev-v2 withdrawn in its favour."""
    ledger = tmp_path / "releases.json"
    shutil.copy(releases.LEDGER_FILE, ledger)
    monkeypatch.setattr(releases, "LEDGER_FILE", ledger)
    monkeypatch.setitem(S.SUITES, "vh-dev-v9", dict(S.SUITES["vh-dev-v2"], name="vh-dev-v9",
                                                    generator=new_generator))
    releases.append_release(releases.Release(
        "vh-dev-v9", new_generator, 100, 10_000_000_000, None, "2027-01-01", "a" * 64,
        "b" * 64, "current", (), "the fake release of a test"), ledger)
    releases.withdraw("vh-dev-v2", ["vh-dev-v9"], "on 2027-01-01, because the generator "
                      "changed its episodes", ledger)
    return "vh-dev-v9"


def test_a_new_generator_refuses_the_released_suite_and_says_what_to_do(
        new_generator: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(S.SuiteVersionError, match=r"mh-gen-2\.5.*mh-gen-9\.0.*release new "
                       r"suite names"):
        S.suite_episode("vh-dev-v2", 0)
    out = tmp_path / "run"
    rc = main(["evaluate", "--suite", "vh-dev-v2", "--agents", "silent", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "release new suite names" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_without_a_generator_change_the_old_name_reproduces_its_digest(tmp_path: Path) -> None:
    rel = releases.release_of("vh-dev-v2")
    assert rel is not None and rel.generator == spec.GENERATOR_V2  # a frozen v2 suite
    assert _export_digests("vh-dev-v2", tmp_path) == rel.digests()


POINTER = "suite 'vh-dev-v2' was withdrawn (on 2027-01-01, because the generator changed " \
          "its episodes); use vh-dev-v9"


def test_withdrawn_name_refused_by_the_python_api(released_v9: str) -> None:
    from mindhelper_env.evaluation import evaluate

    for call in (lambda: S.suite_episode("vh-dev-v2", 0), lambda: S.suite_info("vh-dev-v2"),
                 lambda: S.suite_references("vh-dev-v2"),
                 lambda: evaluate("vh-dev-v2", ["silent"], "/nonexistent/x")):
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value) == POINTER
    env = gym.make("MindHelper-VirtualHome-v0")
    with pytest.raises(ValueError) as err:
        env.reset(options={"suite": "vh-dev-v2", "index": 0})
    assert str(err.value) == POINTER
    # the new name plays
    obs, _ = env.reset(options={"suite": released_v9, "index": 0})
    assert obs["tick"] == 0
    env.close()


@pytest.mark.parametrize("command", [
    ["evaluate", "--suite", "vh-dev-v2", "--agents", "silent", "--out", "{tmp}/out"],
    ["suite", "export", "vh-dev-v2", "{tmp}/out"],
    ["render", "--suite", "vh-dev-v2", "--index", "0", "--agent", "silent",
     "--out", "{tmp}/out.gif"],
    ["play", "--suite", "vh-dev-v2", "--out", "{tmp}/out"],
    ["score", "{records}", "--suite", "vh-dev-v2"],
    ["score", "{records}"],
    ["report", "{records}", "--out", "{tmp}/out"],
])
def test_withdrawn_name_refused_by_every_command_with_one_line(
        command: list[str], dev_records: Path, released_v9: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    if command[0] == "report":
        pytest.importorskip("jinja2")
    argv = [a.format(tmp=tmp_path, records=dev_records) for a in command]
    capsys.readouterr()
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert POINTER in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.gif").exists()


def _newest_by_line() -> dict[str, str]:
    """The highest-numbered suite name of each line among the ledger's current entries
    (computed here from the names, independently of releases.newest_of_line)."""
    best: dict[str, tuple[int, str]] = {}
    for rel in releases.releases():
        m = re.fullmatch(r"(.+)-v(\d+)", rel.name)
        if rel.current and m:
            line, n = m.group(1), int(m.group(2))
            if n > best.get(line, (-1, ""))[0]:
                best[line] = (n, rel.name)
    return {line: name for line, (_n, name) in best.items()}


def test_only_the_newest_generation_is_current_and_older_ones_are_frozen(
        capsys: pytest.CaptureFixture[str]) -> None:
    newest = _newest_by_line()
    assert newest["vh-dev"] == "vh-dev-v5"  # today's generation
    assert main(["list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    for name, info in listing["suites"].items():
        line = re.sub(r"-v\d+$", "", name)
        if newest[line] == name:
            assert info["status"] == "current" and "newest" not in info, name
        else:
            assert info["status"] == "frozen" and info["newest"] == newest[line], name
    assert sum(info["status"] == "current" for info in listing["suites"].values()) \
        == len({re.sub(r"-v\d+$", "", n) for n in listing["suites"]})
    # the withdrawn suites are listed, each with the newest generation to use instead
    withdrawn = listing["withdrawn"]
    assert set(withdrawn) == {r.name for r in releases.releases() if not r.current}
    assert withdrawn["vh-dev-v1"]["use"] == ["vh-dev-v5"]
    assert withdrawn["vh-dev-v1"]["replaced_by"] == ["vh-dev-v2"]  # the ledger, unedited
    assert main(["list"]) == 0
    table = capsys.readouterr().out
    assert "withdrawn: use tdw-test-v5" in table and "frozen (newest: vh-dev-v5)" in table


def test_a_withdrawn_suite_names_the_newest_replacement() -> None:
    newest = _newest_by_line()
    for rel in releases.releases():
        if rel.current:
            continue
        line = re.sub(r"-v\d+$", "", rel.name)
        message = releases.withdrawal_message(rel.name)
        assert message is not None and f"; use {newest[line]}" in message, message
        with pytest.raises(S.SuiteWithdrawnError) as err:
            S.suite_episode(rel.name, 0)
        assert str(err.value) == message
    message = releases.withdrawal_message("vh-dev-v1")
    assert message is not None
    assert message.endswith("use vh-dev-v5 (the newest generation; replaced at the time by "
                            "vh-dev-v2, frozen)")


def test_a_newer_release_freezes_the_current_generation(released_v9: str) -> None:
    assert releases.generation_status("vh-dev-v9") == "current"
    assert releases.generation_status("vh-dev-v5") == "frozen"
    assert releases.generation_status("vh-dev-v4") == "frozen"
    assert releases.generation_status("vh-dev-v2") == "withdrawn"
    assert releases.generation_status("vh-test-v5") == "current"  # another line
    # v1 was replaced by v2, since withdrawn in favour of v9: the chain is followed
    message = releases.withdrawal_message("vh-dev-v1")
    assert message is not None and "; use vh-dev-v9 (the newest generation; replaced at the " \
        "time by vh-dev-v2, withdrawn)" in message


# ------------------------------------------------------------------------------ env ids
def test_retired_env_id_is_refused_with_its_replacement(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.setitem(registration.RETIRED_ENV_IDS, "MindHelper-Test-v0",
                        ("MindHelper-VirtualHome-v0", "its observations changed"))
    registration.register_envs()
    try:
        with pytest.raises(registration.RetiredEnvError,
                           match=r"'MindHelper-Test-v0' was retired \(its observations "
                                 r"changed\); use 'MindHelper-VirtualHome-v0'"):
            gym.make("MindHelper-Test-v0")
    finally:
        gym.registry.pop("MindHelper-Test-v0", None)


def test_env_id_tables() -> None:
    assert not set(registration.RETIRED_ENV_IDS) & set(registration.ENV_SPECS)
    for new, _why in registration.RETIRED_ENV_IDS.values():
        assert new in registration.ENV_SPECS
    for env_id in registration.ENV_SPECS:
        assert env_id in gym.registry and re.search(r"-v\d+$", env_id)
    env = gym.make("MindHelper-VirtualHome-v0")  # the v0 id keeps working
    env.reset(seed=0)
    env.close()


def test_package_version_is_semver_from_the_metadata() -> None:
    from importlib import metadata

    assert mindhelper_env.__version__ == metadata.version("mindhelper-env")
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:[-+.].+)?", mindhelper_env.__version__)
