"""The documentation site's hooks (mkdocs.yml: `hooks`) and its griffe extension
(mkdocstrings' `extensions`); not a page of the site.

* README.md is the site's home page and CHANGELOG.md its changelog: both are read from the
  repository's root, their links to `docs/` pages and to each other made links of the site,
  and their links to other files (notebooks, examples) written as the repository's paths.
* A docs page's link to README.md or CHANGELOG.md (`../README.md#anchor`) is made a link to
  the site's page of it.
* Attribute docs from comments: a constant or a config key without a docstring is described
  by its trailing `# ...` comment, or else by the comment lines just above it (the package's
  way of describing them), so that the API reference shows them.
* Every object that an API reference page renders (each `::: name`, its public members, and
  theirs for classes) must have a docstring: a missing one is a warning, which
  `mkdocs build --strict` makes an error.
"""
from __future__ import annotations

import logging
import pathlib
import re

import griffe
import yaml
from mkdocs.structure.files import File

ROOT_PAGES = {"README.md": "index.md", "CHANGELOG.md": "changelog.md"}
LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(([^()\s]+)\)")
IDENTIFIER = re.compile(r"^::: *([\w.]+)[ \t]*\n((?:[ \t]+.*\n?)*)", re.M)

log = logging.getLogger("mkdocs.hooks.site")


def root_page_links(text: str) -> str:
    """A root page's links as seen from docs/: `docs/x` -> `x`; another relative link
    (a file outside docs/) -> its text and its repository path."""
    def relink(m):
        bang, label, target = m.groups()
        if re.match(r"^[a-z]+:|^#", target):
            return m.group(0)
        if target.startswith("docs/"):
            return f"{bang}[{label}]({target.removeprefix('docs/')})"
        if target in ROOT_PAGES:
            return f"{bang}[{label}]({ROOT_PAGES[target]})"
        return f"{label} (`{target}`)"
    return LINK.sub(relink, text)


def root(config) -> pathlib.Path:
    """The folder of mkdocs.yml: the repository's root."""
    return pathlib.Path(config.config_file_path).resolve().parent


def on_files(files, config):
    """Adds README.md and CHANGELOG.md to the site, as index.md and changelog.md."""
    for name, uri in ROOT_PAGES.items():
        if (root(config) / name).exists():
            content = root_page_links((root(config) / name).read_text())
            files.append(File.generated(config, uri, content=content))
    return files


def root_page_targets(markdown: str, page) -> str:
    """A docs page's links to the root pages, made links to their pages of the site."""
    if page.file.src_uri in ROOT_PAGES.values():
        return markdown
    depth = page.file.src_uri.count("/")
    for name, uri in ROOT_PAGES.items():
        markdown = re.sub(r"\]\(" + re.escape("../" * (depth + 1) + name) + r"(?=[#)])",
                          "](" + "../" * depth + uri, markdown)
    return markdown


class CommentDocs(griffe.Extension):
    """Gives an attribute without a docstring the comment that describes it in the source."""

    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs) -> None:
        if attr.docstring is not None or attr.lineno is None:
            return
        lines = attr.lines_collection[attr.filepath] if attr.filepath else None
        if not lines:
            return
        first, last = attr.lineno - 1, (attr.endlineno or attr.lineno) - 1
        trailing = re.search(r"\s#\s*(.*)$", lines[last])
        above = []
        k = first - 1
        while k >= 0 and lines[k].strip().startswith("#"):
            above.insert(0, lines[k].strip().lstrip("#").strip())
            k -= 1
        text = trailing.group(1) if trailing else " ".join(above)
        if text:
            attr.docstring = griffe.Docstring(text, parent=attr)


def rendered(obj: griffe.Object | griffe.Alias, members: list[str] | None):
    """`obj` and what mkdocstrings renders of it with this site's options: `members` if
    given, else its public members but submodules, and for each class its own public
    members, recursively."""
    yield obj
    target = obj.final_target if obj.is_alias else obj
    if members is not None:
        chosen = [target.members[name] for name in members]
    elif target.is_module or target.is_class:
        chosen = [m for name, m in target.members.items()
                  if not name.startswith("_") and not (target.is_class and m.is_alias)
                  and (target.is_class or m.is_public) and not m.is_module]
    else:
        chosen = []
    for member in chosen:
        if (member.final_target if member.is_alias else member).is_class:
            yield from rendered(member, None)
        else:
            yield member


def missing_docstrings(identifier: str, options: dict, loader: griffe.GriffeLoader) -> list:
    """The paths of the objects rendered by `::: identifier` that have no docstring."""
    package = identifier.split(".")[0]
    if package not in loader.modules_collection:
        loader.load(package)
        loader.resolve_aliases(implicit=False, external=False)
    obj = loader.modules_collection[identifier]
    return [o.path for o in rendered(obj, options.get("members")) if not documented(o)]


def documented(obj) -> bool:
    """Whether `obj` has a docstring; a class's attribute may instead be named in a code
    span of its class's docstring (`State`'s `terminated`, say)."""
    obj = obj.final_target if obj.is_alias else obj
    if obj.docstring:
        return True
    parent = obj.parent
    return bool(obj.is_attribute and parent is not None and parent.is_class and parent.docstring
                and any(re.match(rf"{obj.name}\b", span)
                        for span in re.findall(r"`([^`]+)`", parent.docstring.value)))


_LOADERS: dict[pathlib.Path, griffe.GriffeLoader] = {}  # this build's, by root


def on_pre_build(config):
    """Forgets the last build's sources (`mkdocs serve` rebuilds on a change)."""
    _LOADERS.clear()


def on_page_markdown(markdown, page, config, files):
    """Links to the root pages made the site's (`root_page_targets`); on an API page, a
    warning (an error under --strict) for each object without a docstring."""
    markdown = root_page_targets(markdown, page)
    if not page.file.src_uri.startswith("reference/"):
        return markdown
    if root(config) not in _LOADERS:
        _LOADERS[root(config)] = griffe.GriffeLoader(
            extensions=griffe.load_extensions(CommentDocs), search_paths=[str(root(config))])
    for identifier, block in IDENTIFIER.findall(markdown):
        options = (yaml.safe_load(block) or {}).get("options", {}) if block.strip() else {}
        for path in missing_docstrings(identifier, options, _LOADERS[root(config)]):
            log.warning(f"{page.file.src_uri}: {path} has no docstring")
    return markdown
