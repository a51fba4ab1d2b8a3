"""The documentation site (mkdocs.yml, `make docs`): it builds with every warning an error, those settings catch
a dead link and a broken API reference, and the pages read as pages: no reStructuredText markup shown as text,
a signature for every function and class the API pages document, the pages a newcomer needs.

The site is built once per test session (the `site` fixture); each test reads the built pages."""

from __future__ import annotations

import fcntl
import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO

ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):`?")
RST_TABLE_RULE = re.compile(r"={3,}[ \t]+={3,}")
ARTICLE = re.compile(r"<article[^>]*>(.*)</article>", re.S)
DOC_HEADING = re.compile(
    r'<h(\d) id="([^"]+)" class="doc doc-heading">(.*?)</h\1>\s*(<div class="doc-signature)?', re.S
)  # an API object's heading, and its signature when one follows


def build(config: str, site, cwd=REPO) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of `config`, into `site`."""
    environment = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", config, "--site-dir", str(site)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )


def page_text(page: str) -> str:
    """The text a reader sees in a page's article: tags dropped, entities decoded."""
    found = ARTICLE.search(page)
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1) if found else page))


def rst_markup(page: str) -> list[str]:
    """The reStructuredText a page shows as text: roles (``) and simple-table rules (`==== ====`)."""
    text = page_text(page)
    return [m.group(0) for m in ROLE.finditer(text)] + [m.group(0) for m in RST_TABLE_RULE.finditer(text)]


def lists_as_text(page: str) -> list[str]:
    """Paragraphs that hold list items as running text: a list Python-Markdown did not read as one (written
    for GitHub, right after a paragraph or nested by 2 or 3 spaces)."""
    paragraphs = re.findall(r"<p>(.*?)</p>", page, re.S)
    return [paragraph[:80] for paragraph in paragraphs if re.search(r"\n\s*([-*+]|\d+\.) ", paragraph)]


def unsigned(page: str) -> list[str]:
    """The functions, methods and classes an API page documents without a signature under their heading (and
    the objects whose heading does not say what kind of object they are, so that none is missed)."""
    missing = []
    for heading in DOC_HEADING.finditer(page):
        kind = re.search(r"doc-symbol-heading doc-symbol-(\w+)", heading.group(3))
        if not kind:
            missing.append(f"{heading.group(2)} (kind not shown)")
        elif kind.group(1) in ("function", "method", "class") and not heading.group(4):
            missing.append(heading.group(2))
    return missing


@pytest.fixture(scope="session")
def site(tmp_path_factory, worker_id) -> Path:
    """The site as `make docs` builds it (strict), once per test session: pytest-xdist's workers share one
    build (the first to take the lock builds, the others wait for it and read it)."""
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent  # the session's folder, above each worker's own
    root, log = shared / "docs-site", shared / "docs-site.log"
    with open(shared / "docs-site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not log.exists():
            done = build("mkdocs.yml", root)
            log.write_text(f"{done.returncode}\n{done.stderr[-3000:]}")
    status, _, stderr = log.read_text().partition("\n")
    assert status == "0", stderr
    return root


def pages_of(site: Path) -> dict[str, str]:
    return {str(path.parent.relative_to(site)): path.read_text() for path in site.rglob("index.html")}


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(site):
    names = set(pages_of(site))
    assert {".", "RULES", "ARCHITECTURE", "BENCHMARK", "SKILL", "pictures", "api", "api/agents"} <= names
    assert {"guide/pettingzoo", "guide/gymnasium", "guide/benchmark-your-own-agent"} <= names  # the README's
    agents = (site / "api" / "agents" / "index.html").read_text()
    assert "load_agent" in agents and "MissingExtraError" in (site / "api/core/index.html").read_text()


@pytest.mark.slow
def test_no_page_shows_restructuredtext(site):
    """Docstrings are Markdown (Google style): a role or a table rule printed as text is a docstring left in
    reStructuredText, or a page written in it."""
    shown = {name: marks[:5] for name, page in pages_of(site).items() if (marks := rst_markup(page))}
    assert not shown, shown


@pytest.mark.slow
def test_every_list_is_shown_as_a_list(site):
    """docs/RULES.md, ARCHITECTURE.md and CHANGELOG.md put lists right after a paragraph and nest them by 2 or 3
    spaces, as GitHub reads them; the site shows them as lists too (mkdocs_hooks.py)."""
    shown = {name: found[:3] for name, page in pages_of(site).items() if (found := lists_as_text(page))}
    assert not shown, shown
    rules = (site / "RULES" / "index.html").read_text()
    assert re.search(r"<li>\s*<p><strong>Roll\.</strong>.*?<ul>\s*<li>Red: ", rules, re.S)  # nested in item 1


@pytest.mark.slow
def test_a_named_object_links_to_its_api_entry(site):
    """A code span naming a documented object (a role before the conversion) is a link to its entry; one naming
    a file or anything undocumented stays text."""
    agents = (site / "api" / "agents" / "index.html").read_text()
    rollout = "strategic_reserve_env.agents.rollout"
    assert f'href="#{rollout}"><code>{rollout}</code></a>' in agents
    benchmark = (site / "BENCHMARK" / "index.html").read_text()
    assert (
        'href="../api/core/#strategic_reserve_env.core.luck"><code>strategic_reserve_env.core.luck</code></a>'
        in benchmark
    )
    architecture = (site / "ARCHITECTURE" / "index.html").read_text()
    assert "<code>rules.py</code>" in architecture and 'title="strategic_reserve_env.core.rules.py"' not in architecture


def test_the_checks_see_restructuredtext_and_a_missing_signature():
    """The checks above, on pages as a reST docstring rendered as Markdown showed them (issue 36)."""
    raw = "<article><p>See :func:<code>roll_info</code> and\n========== ====\nspec agent</p></article>"
    assert rst_markup(raw) == [":func:", "========== ===="]
    assert rst_markup("<article><p>a <code>roll_info</code> table</p><table></table></article>") == []
    as_text = "Modules\n- <code>board.py</code>: geometry"
    assert lists_as_text(f"<p>{as_text}</p>") == [as_text]
    assert lists_as_text("<p>Modules</p>\n<ul>\n<li>board.py</li>\n</ul>") == []
    heading = (
        '<h3 id="m.f" class="doc doc-heading"><code class="doc-symbol doc-symbol-heading doc-symbol-function">'
        "</code>f</h3>"
    )
    assert unsigned(heading + "<p>no signature</p>") == ["m.f"]
    assert unsigned('<h3 id="m.g" class="doc doc-heading">g</h3>') == ["m.g (kind not shown)"]
    assert unsigned(heading + '\n<div class="doc-signature highlight">f()</div>') == []


API_PAGES = ["core", "records", "envs", "jax", "pictures", "agents", "search", "integrations", "evaluation"]


@pytest.mark.slow
@pytest.mark.parametrize("name", API_PAGES)
def test_every_api_object_shows_its_signature(site, name):
    page = (site / "api" / name / "index.html").read_text()
    documented = DOC_HEADING.findall(page)
    assert len(documented) >= 5, f"api/{name} documents {len(documented)} objects"
    assert not unsigned(page), unsigned(page)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, modules",
    [
        (
            "jax",
            [
                "strategic_reserve_env.envs.pgx_env.StrategicReserve",
                "strategic_reserve_env.envs.jax_rules.resolve_roll",
            ],
        ),
        (
            "search",
            [
                "strategic_reserve_env.agents.mctx_agent.MctxAgent",
                "strategic_reserve_env.agents.mctx_search.TrueModel",
                "strategic_reserve_env.agents.az_net.apply",
            ],
        ),
        (
            "integrations",
            [
                "strategic_reserve_env.envs.openspiel.StrategicReserveGame",
                "strategic_reserve_env.envs.rllib_env.StrategicReserveMultiAgentEnv",
            ],
        ),
    ],
)
def test_the_new_api_pages_document_their_modules(site, name, modules):
    """Read statically: the build imports neither jax's extras, OpenSpiel nor Ray (each object by its full
    dotted name, so that a module's move renames it here too)."""
    page = (site / "api" / name / "index.html").read_text()
    for module in modules:
        assert f'id="{module}"' in page, module


@pytest.mark.slow
def test_a_newcomer_finds_the_pages_of_a_library_site(site):
    pages = pages_of(site)
    needed = {"installation", "quickstart", "changelog", "examples/inspect_learned_play"}
    needed |= {f"envs/{env}" for env in ("aec", "gymnasium", "vector", "sb3", "pgx")}
    needed |= {f"benchmark/{card.stem}" for card in (REPO / "docs" / "benchmark").glob("*.md")}
    assert needed <= set(pages), needed - set(pages)
    nav = pages["."]
    for card in (REPO / "docs" / "benchmark").glob("*.md"):
        assert f'href="benchmark/{card.stem}/"' in nav, f"{card.name} is not in the nav"
    # the notebook as executed: its pictures and printed output are on the page
    notebook = pages["examples/inspect_learned_play"]
    assert "<svg" in notebook and "data:image/png;base64," in notebook and "dice stream" in notebook
    assert "0.4.0 (2026-11-28)" in page_text(pages["changelog"]) and "Unreleased" not in pages["changelog"]
    for env in ("aec", "gymnasium", "vector", "sb3", "pgx"):
        card = pages[f"envs/{env}"]  # PettingZoo's shape: a picture, then a section for each of these
        sections = ("action-space", "observation", "rewards", "termination-and-truncation", "example")
        sections += ("arguments", "starting-state", "version-history")  # Gymnasium's and PettingZoo's too
        assert "<img" in card and all(f'id="{section}"' in card for section in sections), env
        assert "<table>" in card and "<th>plane</th>" in card, env  # the observation's planes
        assert not re.search(r"<th>\s*</th>", card), env  # no spec table with an empty header row
    assert 'src="../../pictures/game.gif"' in pages["envs/aec"]  # the animated game on the AEC card
    # a code block keeps its lines and scrolls (a wrapped line read as code at column 0), a cell breaks no word
    assert 'href="stylesheets/extra.css"' in nav
    css = re.sub(r"/\*.*?\*/", "", (site / "stylesheets" / "extra.css").read_text(), flags=re.S)  # the rules
    code_rule = re.search(r"pre > code \{([^}]*)\}", css).group(1)
    assert "white-space: pre;" in code_rule and "overflow-x: auto" in code_rule
    assert "pre-wrap" not in css and "break-word" not in css and "anywhere" not in css
    jax_guide = pages["guide/jax-and-pgx"]
    assert 'href="../../api/jax/' in jax_guide and 'href="../../envs/pgx/' in jax_guide


@pytest.mark.slow
def test_wheel_users_are_not_sent_to_a_clone(site):
    """A wheel has no `evaluate.py` and nothing to install editable: a page says `python evaluate.py` only as
    what a clone also has, and `pip install -e` nowhere; the installation page installs the wheel by its file."""
    for name, page in pages_of(site).items():
        text = page_text(page)
        assert "pip install -e" not in text, name
        for found in re.finditer(r"python evaluate\.py", text):
            assert "clone" in text[max(0, found.start() - 300) : found.start()].lower(), (name, found.start())
    installation = page_text((site / "installation" / "index.html").read_text())
    assert 'pip install "./strategic_reserve_env-' in installation and "download.pytorch.org/whl/cpu" in installation


@pytest.mark.slow
def test_page_titles_are_names_and_guides_list_their_sections(site):
    pages = pages_of(site)
    guides = [name for name in pages if name.startswith("guide/")]
    assert all(len(name.split("/")[1].split("-")) <= 5 for name in guides), guides
    assert re.search(r"<h1[^>]*>Results<", pages["guide/results"])  # its parenthesis is a line under the title
    assert "<em>Measured on this project's 2-core CPU machine.</em>" in html.unescape(pages["guide/results"])
    sections = re.findall(r'<li class="md-nav__item">\s*<a href="#([^"]+)"', pages["guide/agents-and-evaluation"])
    assert "luck-adjusted-scores" in sections and "model-files-run-no-code" in sections


@pytest.mark.slow
def test_the_site_names_no_placeholder_address(site):
    """`site_url` is pyproject.toml's Documentation address where it has one; the project has none yet, so no
    page names a canonical link, and no page or the sitemap shows a placeholder (`OWNER`, `<the repository>`)."""
    assert not re.search(r"^Documentation\s*=", (REPO / "pyproject.toml").read_text(), flags=re.M)
    for name, page in pages_of(site).items():
        assert 'rel="canonical"' not in page, name
        assert "OWNER" not in page and "&lt;the repository&gt;" not in page, name
    assert "OWNER" not in (site / "404.html").read_text()


@pytest.mark.slow
@pytest.mark.parametrize(
    "page, fault",
    [
        ("See [the rules](NO_SUCH_PAGE.md).\n", "NO_SUCH_PAGE.md"),
        ("See [a turn](other.md#no-such-heading).\n", "no-such-heading"),
        ("::: strategic_reserve_env.no_such_module\n", "no_such_module"),
    ],
    ids=["dead-link", "dead-anchor", "broken-reference"],
)
def test_the_site_settings_fail_a_dead_link_or_a_broken_reference(tmp_path, page, fault):
    """The validation and plugin settings of mkdocs.yml, on a two-page site holding one fault."""
    with open(REPO / "mkdocs.yml") as file:
        config = yaml.safe_load(file)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n" + page)
    (docs / "other.md").write_text("# Other\n\n## A heading\n")
    config.update(docs_dir=str(docs), nav=["index.md", "other.md"], hooks=[], exclude_docs="")
    config["plugins"][1]["mkdocstrings"]["handlers"]["python"]["paths"] = [str(REPO)]
    config["plugins"][1]["mkdocstrings"]["custom_templates"] = str(REPO / "mkdocs_templates")
    config["extra_css"] = []
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    done = build(str(tmp_path / "mkdocs.yml"), tmp_path / "site", cwd=tmp_path)
    assert done.returncode != 0 and fault in done.stderr, done.stderr[-2000:]
