"""MkDocs hooks of the documentation site (mkdocs.yml): the package as it installs, the README's sections as
the site's guide pages, the example notebook and the changelog as pages.

The API pages read the source statically (mkdocstrings and griffe). The repository keeps `agents/`,
`evaluation/` and `models/` at its top, and they install as subpackages of `strategic_reserve_env`
(pyproject's package-dir, docs/ARCHITECTURE.md "One import name"); `on_startup` lays the same tree out of
links in `build/api-source`, the folder mkdocs.yml gives griffe.

The README stays the one copy of the guides (GitHub and PyPI show it whole); the site shows its opening as the
home page and each `## ` section as a page of its own under `guide/` (its `###` subsections, and its paragraphs
that open with a bold title, as the page's sections, listed in the page's contents), with the README's links
into `docs/` rewritten to the site's pages. The nav lists them in the README's order, so a section added to the
README is a page of the site at the next build. A page's title and address are the section's heading without
its parenthesis; a parenthesis of several words is a line under the title.

`examples/*.ipynb` are shown as pages with the outputs they were saved with (the tests execute the notebook,
tests/test_inspection.py), and CHANGELOG.md as the changelog page.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).parent
README = ROOT / "README.md"
CHANGELOG = ROOT / "CHANGELOG.md"
PYPROJECT = ROOT / "pyproject.toml"
EXAMPLES = ROOT / "examples"
API_SOURCE = ROOT / "build" / "api-source"  # mkdocs.yml: plugins.mkdocstrings.handlers.python.paths
SUBPACKAGES = ("agents", "evaluation", "models")  # folders of the repository installed into strategic_reserve_env
FENCE = re.compile(r"^\s*(```|~~~)")
RUN_IN = re.compile(r"^\*\*([^*]+?)[.:]\*\*\s+(.*)$")  # "**Title.** text": a paragraph with a run-in title


def _title(heading: str) -> str:
    """A section's title for the nav and its page's address: the heading without a parenthesis."""
    return re.sub(r"\s*\([^)]*\)", "", heading).strip()


def _sections() -> tuple[str, list[tuple[str, str, str]]]:
    """(the README's opening, [(title, page path, text), ...] for each `## ` section outside code blocks)."""
    opening: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    fenced = False
    for line in README.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            sections.append((line[3:].strip(), []))
        target = sections[-1][1] if sections else opening
        if sections and not fenced and line.startswith("###"):
            line = line[1:]  # a subsection is a section of the guide's page
        run_in = RUN_IN.match(line) if sections and not fenced and not (target and target[-1].strip()) else None
        if run_in:  # a paragraph opening with a bold title ("**Rewards.** ...") is a section of the page too
            target += ["## " + run_in.group(1), ""]
            line = run_in.group(2)
        target.append(line)
    pages = []
    for heading, lines in sections:
        title = _title(heading)
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
        aside = re.findall(r"\(([^)]*)\)", heading)  # "(measured on ...)": a line under the title
        intro = [f"*{text[:1].upper()}{text[1:]}.*\n" for text in aside if " " in text]
        body = "\n".join(["# " + title, "", *intro, *lines[1:]]) + "\n"
        pages.append((title, f"guide/{slug}.md", body))
    return "\n".join(opening) + "\n", pages


def _relinked(text: str, depth: int) -> str:
    """The README's links into `docs/` as links between the site's pages, from a page `depth` folders down."""
    return re.sub(r"\]\(docs/", "](" + "../" * depth, text)


def _lay_out_package() -> None:
    """`build/api-source/strategic_reserve_env`: links to the package's files and to the subpackages' folders,
    as a wheel installs them. Brought up to date in place, never removed first, so that two builds at once (the
    tests run in parallel) each see a whole tree."""
    package = API_SOURCE / "strategic_reserve_env"
    _link_files(ROOT / "strategic_reserve_env", package)
    for name in SUBPACKAGES:
        _link_files(ROOT / name, package / name)


def _link_files(source: Path, target: Path) -> None:
    """`target`: real folders (griffe does not walk into linked ones) holding links to `source`'s .py files;
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


LIST_ITEM = re.compile(r"^( *)([-*+]|\d+[.)])( +)\S")


def lists_for_python_markdown(text: str) -> str:
    """Markdown written for GitHub (CommonMark) with its lists laid out as Python-Markdown, which MkDocs uses,
    reads them: a blank line before a list that follows a paragraph, and an item's content (its paragraphs,
    nested lists and code blocks) indented by 4 spaces a level instead of by the width of its marker. Without
    this a list after a paragraph, or a nested list indented by 2 or 3, is shown as running text."""
    out: list[str] = []
    levels: list[tuple[int, int]] = []  # open items: (content column as written, content column laid out)
    blank_before = True
    fenced = False
    for line in text.split("\n"):
        if not line.strip():
            out.append(line)
            blank_before = True
            continue
        indent = len(line) - len(line.lstrip(" "))
        item = None if fenced else LIST_ITEM.match(line)
        if item:
            while levels and indent < levels[-1][0]:
                levels.pop()
            if not levels and out and not blank_before:
                out.append("")  # a list after a paragraph
            column = levels[-1][1] if levels else 0
            levels.append((indent + len(item.group(2)) + len(item.group(3)), column + 4))
            line = " " * column + line.lstrip(" ")
        elif levels and not fenced:
            while levels and indent < levels[-1][0] and blank_before:
                levels.pop()  # a paragraph after a blank line, left of the item's content, closes it
            if levels:
                written, laid_out = levels[-1]
                line = " " * (laid_out + max(0, indent - written)) + line.lstrip(" ")
        elif levels and fenced:
            written, laid_out = levels[-1]
            line = " " * max(0, laid_out + indent - written) + line.lstrip(" ")
        if FENCE.match(line):
            fenced = not fenced
        out.append(line)
        blank_before = False
    return "\n".join(out)


def on_page_markdown(markdown, page, config, files):
    """Every page's lists as Python-Markdown reads them (`lists_for_python_markdown`)."""
    return lists_for_python_markdown(markdown)


CODE_NAME = re.compile(r"<code>((?:strategic_reserve_env\.)?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(\(\))?</code>")
NOT_LINKED = re.compile(r"(<a\b.*?</a>|<pre\b.*?</pre>|<h\d\b.*?</h\d>)", re.S)  # a link, a code block, a heading


def linked_names(html: str, documented) -> str:
    """`html` with each code span that names an object of the package (`strategic_reserve_env.core.luck.roll_luck`,
    or `luck.roll_luck` under it) that `documented(identifier)` finds made a cross-reference to its API entry
    (mkdocs-autorefs writes the link). Links, code blocks and headings are left as they are."""

    def link(match: re.Match) -> str:
        name = match.group(1)
        target = name if name.startswith("strategic_reserve_env.") else f"strategic_reserve_env.{name}"
        if not documented(target):
            return match.group(0)
        return f'<autoref identifier="{target}" optional>{match.group(0)}</autoref>'

    parts = NOT_LINKED.split(html)
    return "".join(part if index % 2 else CODE_NAME.sub(link, part) for index, part in enumerate(parts))


def on_env(env, config, files):
    """Every page rendered: the package's objects named in code spans link to their API entries
    (`linked_names`). Runs before mkdocs-autorefs' own `on_env` (priority -50), which resolves the links."""
    autorefs = config.plugins["autorefs"]

    def documented(identifier: str) -> bool:
        try:
            autorefs.get_item_url(identifier)
        except KeyError:
            return False
        return True

    for file in files:
        if file.page is not None and file.page.content:
            file.page.content = linked_names(file.page.content, documented)
    return env


GUIDES_BEFORE = "Rules"  # the nav entry of mkdocs.yml the guides come before


def documentation_url() -> str | None:
    """pyproject.toml's Documentation address (`[project.urls]`), the site's `site_url`; None while the project
    has none (the site then names no canonical address rather than a made-up one)."""
    found = re.search(r'^Documentation\s*=\s*"([^"]+)"', PYPROJECT.read_text(encoding="utf-8"), flags=re.M)
    return found.group(1).rstrip("/") + "/" if found else None


def on_config(config):
    """`site_url` from pyproject.toml (left out where it has none); the nav: home, then the nav of mkdocs.yml
    with the README's guides, in order, before its Rules."""
    config["site_url"] = config["site_url"] or documentation_url()
    _, pages = _sections()
    nav = list(config["nav"])
    at = next(i for i, entry in enumerate(nav) if isinstance(entry, dict) and GUIDES_BEFORE in entry)
    nav.insert(at, {"Guides": [{title: path} for title, path, _ in pages]})
    config["nav"] = [{"Home": "index.md"}, *nav]
    return config


def _fenced(text: str, language: str = "text") -> list[str]:
    """`text` as a fenced code block (a fence longer than any run of backticks in it)."""
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`+", text))])
    return [fence + language, text.rstrip("\n"), fence, ""]


def _output(output: dict) -> list[str]:
    """One saved output of a code cell as Markdown: text as a block, an SVG inline, a PNG as an image, Markdown
    as itself."""
    if output["output_type"] == "stream":
        return _fenced("".join(output["text"]))
    if output["output_type"] == "error":
        return _fenced("\n".join(output.get("traceback", [])))
    data = output.get("data", {})
    if "image/svg+xml" in data:
        svg = "".join(data["image/svg+xml"])
        svg = re.sub(r"<\?xml[^>]*\?>", "", svg).strip()
        return ['<div class="notebook-output">', svg, "</div>", ""]
    if "image/png" in data:
        png = "".join(data["image/png"]).replace("\n", "")
        base64.b64decode(png, validate=True)  # a saved image, never text placed into the page
        return [f'<p class="notebook-output"><img alt="output" src="data:image/png;base64,{png}"></p>', ""]
    if "text/markdown" in data:
        return ["".join(data["text/markdown"]), ""]
    if "text/plain" in data:
        return _fenced("".join(data["text/plain"]))
    return []


def notebook_page(path: Path) -> str:
    """A notebook as a Markdown page: its Markdown cells, its code cells as Python blocks, each followed by the
    outputs it was saved with."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    lines: list[str] = []
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            lines += [source, ""]
        elif cell["cell_type"] == "code":
            lines += _fenced(source, "python")
            for output in cell.get("outputs", []):
                lines += _output(output)
    lines += ["", f"*`examples/{html.escape(path.name)}` in a clone, shown with the outputs it was saved with.*", ""]
    return "\n".join(lines)


def on_files(files, config):
    """Add the home page and the guide pages, made from the README, the example notebooks and the changelog."""
    opening, pages = _sections()
    files.append(File.generated(config, "index.md", content=_relinked(opening, 0)))
    for _, path, body in pages:
        files.append(File.generated(config, path, content=_relinked(body, 1)))
    for notebook in sorted(EXAMPLES.glob("*.ipynb")):
        files.append(File.generated(config, f"examples/{notebook.stem}.md", content=notebook_page(notebook)))
    files.append(File.generated(config, "changelog.md", content=CHANGELOG.read_text(encoding="utf-8")))
    return files
