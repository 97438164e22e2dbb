"""The documentation site (mkdocs.yml) builds with `--strict`: no dead link or anchor, and every
public name of the API reference (docs/reference/) has a docstring; a missing one fails the
build (docs/site_hooks.py). Needs the `docs` extra (marker `docs`)."""
import os
import subprocess
import sys
import textwrap

import pytest

from tests.fresh import ROOT

pytestmark = pytest.mark.docs


def build(config, site):
    """`mkdocs build --strict` of `config` into `site`: the finished process."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
         "-d", str(site)], capture_output=True, text=True, cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def test_the_site_builds_strictly_with_the_api_reference(tmp_path):
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    site = tmp_path / "site"
    assert "Where next" in (site / "index.html").read_text()  # README.md is the home page
    assert (site / "changelog" / "index.html").exists()
    engine = (site / "reference" / "engine" / "index.html").read_text()
    for name in ("trictrac_jax.Trictrac.step", "trictrac_jax.State.legal_action_mask",
                 "trictrac_jax.make", "trictrac_jax.from_string_id"):
        assert f'id="{name}"' in engine, name
    config = (site / "reference" / "az-config" / "index.html").read_text()
    # a config key is described by its comment in the source
    assert "mctx.gumbel_muzero_policy" in config


def test_a_missing_docstring_fails_the_build(tmp_path):
    """The site's hooks on a package of one documented and one undocumented function."""
    (tmp_path / "docs" / "reference").mkdir(parents=True)
    (tmp_path / "docs" / "reference" / "pkg.md").write_text("# pkg\n\n::: pkg\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(textwrap.dedent('''\
        """A package."""
        LIMIT = 3  # a constant, described by its comment


        def documented(x):
            """int32[N]: `x` as it is."""
            return x


        def undocumented(x):
            return x
        '''))
    config = tmp_path / "mkdocs.yml"
    config.write_text(textwrap.dedent(f"""\
        site_name: pkg
        hooks: [{ROOT / "docs" / "site_hooks.py"}]
        plugins:
          - mkdocstrings:
              handlers:
                python:
                  paths: [.]
        """))
    done = build(config, tmp_path / "site")
    assert done.returncode != 0
    assert "pkg.undocumented has no docstring" in done.stderr
    assert "pkg.documented has" not in done.stderr and "pkg.LIMIT" not in done.stderr
