"""The API reference site (mkdocs.yml, `make docs`): it builds with every warning an error, and those settings
catch a dead link and a broken API reference."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from conftest import REPO


def build(config: str, site, cwd=REPO) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of ``config``, into ``site``."""
    environment = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", config, "--site-dir", str(site)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    done = build("mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    pages = sorted(path.parent.relative_to(tmp_path / "site") for path in (tmp_path / "site").rglob("index.html"))
    names = {str(page) for page in pages}
    assert {".", "RULES", "ARCHITECTURE", "BENCHMARK", "SKILL", "pictures", "api", "api/agents"} <= names
    assert {"guide/pettingzoo", "guide/gymnasium", "guide/benchmark-your-own-agent"} <= names  # the README's
    agents = (tmp_path / "site" / "api" / "agents" / "index.html").read_text()
    assert "load_agent" in agents and "MissingExtraError" in (tmp_path / "site/api/core/index.html").read_text()


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
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    done = build(str(tmp_path / "mkdocs.yml"), tmp_path / "site", cwd=tmp_path)
    assert done.returncode != 0 and fault in done.stderr, done.stderr[-2000:]
