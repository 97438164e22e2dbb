"""The docs stay true to the tree: docs/architecture.md's module map names every module of the
package (each `.py` file under trictrac_jax/, subpackages included) and nothing else, and
every relative link of README.md and docs/**/*.md resolves: the file exists, and a
`#fragment` is the GitHub anchor of one of its headings. Pure file reads."""
import re
import urllib.parse

from tests.fresh import ROOT

PACKAGE = ROOT / "trictrac_jax"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAP_HEADING = "## The module map"
MAP_ROW = re.compile(r"^\| *`(trictrac_jax/[\w/]+\.py)` *\|", re.M)

FENCE = re.compile(r"^ *(```|~~~).*?^ *\1 *$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
# [text](target "title") and ![alt](target); link text may hold one level of brackets
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$", re.M)


def docs() -> list:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def prose(text: str) -> str:
    """`text` without its fenced blocks and code spans (whose brackets are not links)."""
    return CODE_SPAN.sub("code", FENCE.sub("", text))


def package_modules() -> set:
    return {p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py")
            if "__pycache__" not in p.parts}


def mapped_modules() -> list:
    """The modules that architecture.md's map names, one a table row, in its order."""
    text = ARCHITECTURE.read_text()
    assert MAP_HEADING in text, f"{ARCHITECTURE.name} has no section {MAP_HEADING!r}"
    section = text.split(MAP_HEADING, 1)[1].split("\n## ", 1)[0]
    return MAP_ROW.findall(section)


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: its text (links and code marks dropped) lowercased,
    punctuation but `-` and `_` removed, spaces turned into hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path) -> set:
    """Every heading's anchor in `path`, repeats numbered as GitHub numbers them (-1, -2)."""
    found, seen = set(), {}
    for _, heading in HEADING.findall(FENCE.sub("", path.read_text())):
        anchor = github_anchor(heading)
        found.add(anchor if anchor not in seen else f"{anchor}-{seen[anchor]}")
        seen[anchor] = seen.get(anchor, 0) + 1
    return found


def broken_links(path, root=ROOT) -> list:
    """'where: target (why)' for each relative link of `path` that does not resolve, `where`
    relative to `root`."""
    broken = []
    for target in LINK.findall(prose(path.read_text())):
        if not target or re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto:, ...
            continue
        file_part, _, fragment = urllib.parse.unquote(target).partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(root)}: {target}"
        if not linked.exists():
            broken.append(f"{where} (no such file)")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            broken.append(f"{where} (no heading with that anchor in {linked.name})")
    return broken


def test_the_module_map_names_every_module_and_nothing_else():
    mapped = mapped_modules()
    repeated = sorted({m for m in mapped if mapped.count(m) > 1})
    missing = sorted(package_modules() - set(mapped))
    stale = sorted(set(mapped) - package_modules())
    assert not (repeated or missing or stale), (
        f"docs/architecture.md, {MAP_HEADING!r}: modules missing from the map: {missing}; "
        f"named but not in the tree: {stale}; named twice: {repeated}")


def test_every_relative_link_in_the_docs_resolves():
    broken = [line for path in docs() for line in broken_links(path)]
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_link_checker_sees_what_it_should(tmp_path):
    """A missing file, a missing heading and a link inside code are told apart."""
    (tmp_path / "a.md").write_text(
        "# Title\n\n## A run for a GPU session: `train/gpu_run.py`\n\n## Twice\n\n## Twice\n\n"
        "[ok](#a-run-for-a-gpu-session-traingpu_runpy) [ok](b.md#twice-1) [ok](b.md)\n"
        "[bad](c.md) [bad](b.md#nowhere) ![bad](img.png) `[code](c.md)` [web](https://x.org/y)\n"
        "```text\n[fenced](c.md)\n```\n")
    (tmp_path / "b.md").write_text("## Twice\n\n## Twice\n")
    assert broken_links(tmp_path / "a.md", root=tmp_path) == ["a.md: c.md (no such file)",
                      "a.md: b.md#nowhere (no heading with that anchor in b.md)",
                      "a.md: img.png (no such file)"]
