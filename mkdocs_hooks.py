"""MkDocs hooks of the documentation site (mkdocs.yml): the package as it installs, and the README's sections as
the site's guide pages.

The API pages read the source statically (mkdocstrings and griffe). The repository keeps ``agents/``,
``evaluation/`` and ``models/`` at its top, and they install as subpackages of ``strategic_reserve_env``
(pyproject's package-dir, docs/ARCHITECTURE.md "One import name"); :func:`on_config` lays the same tree out of
links in ``build/api-source``, the folder mkdocs.yml gives griffe.

The README stays the one copy of the guides (GitHub and PyPI show it whole); the site shows its opening as the
home page and each ``## `` section as a page of its own under ``guide/``, with the README's links into
``docs/`` rewritten to the site's pages. The nav lists them in the README's order, so a section added to the
README is a page of the site at the next build.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).parent
README = ROOT / "README.md"
API_SOURCE = ROOT / "build" / "api-source"  # mkdocs.yml: plugins.mkdocstrings.handlers.python.paths
SUBPACKAGES = ("agents", "evaluation", "models")  # folders of the repository installed into strategic_reserve_env
FENCE = re.compile(r"^\s*(```|~~~)")


def _sections() -> tuple[str, list[tuple[str, str, str]]]:
    """(the README's opening, [(title, page path, text), ...] for each ``## `` section outside code blocks)."""
    opening: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    fenced = False
    for line in README.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            sections.append((line[3:].strip(), []))
        (sections[-1][1] if sections else opening).append(line)
    pages = []
    for title, lines in sections:
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
        body = "\n".join(["# " + title, *lines[1:]]) + "\n"
        pages.append((title, f"guide/{slug}.md", body))
    return "\n".join(opening) + "\n", pages


def _relinked(text: str, depth: int) -> str:
    """The README's links into ``docs/`` as links between the site's pages, from a page ``depth`` folders down."""
    return re.sub(r"\]\(docs/", "](" + "../" * depth, text)


def _lay_out_package() -> None:
    """``build/api-source/strategic_reserve_env``: links to the package's files and to the subpackages' folders,
    as a wheel installs them. Brought up to date in place, never removed first, so that two builds at once (the
    tests run in parallel) each see a whole tree."""
    package = API_SOURCE / "strategic_reserve_env"
    _link_files(ROOT / "strategic_reserve_env", package)
    for name in SUBPACKAGES:
        _link_files(ROOT / name, package / name)


def _link_files(source: Path, target: Path) -> None:
    """``target``: real folders (griffe does not walk into linked ones) holding links to ``source``'s .py files;
    links whose file is gone are dropped, each new link is put in place by a rename (atomic)."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.is_dir() and entry.name != "__pycache__" and (entry / "__init__.py").is_file():
            _link_files(entry, target / entry.name)
        elif entry.suffix == ".py":
            link = target / entry.name
            if link.is_symlink() and link.resolve() == entry.resolve():
                continue
            fresh = target / f".{entry.name}.{os.getpid()}"
            fresh.unlink(missing_ok=True)
            fresh.symlink_to(entry)
            os.replace(fresh, link)
    for link in target.iterdir():
        if link.is_symlink() and not link.exists():
            link.unlink(missing_ok=True)


def on_startup(command, dirty):
    """The package's tree for griffe, laid out before any plugin's configuration runs (mkdocstrings takes its
    search paths as they exist when it is configured, so a tree made later is missed on the first build)."""
    _lay_out_package()


def on_config(config):
    """The nav: home, the README's guides in order, then the nav of mkdocs.yml."""
    _, pages = _sections()
    config["nav"] = [
        {"Home": "index.md"},
        {"Guides": [{title: path} for title, path, _ in pages]},
        *config["nav"],
    ]
    return config


def on_files(files, config):
    """Add the home page and the guide pages, made from the README."""
    opening, pages = _sections()
    files.append(File.generated(config, "index.md", content=_relinked(opening, 0)))
    for _, path, body in pages:
        files.append(File.generated(config, path, content=_relinked(body, 1)))
    return files
