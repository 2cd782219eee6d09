"""``ort_ops.rewrite`` and ``ort_ops.cann_ep`` in a source checkout.

Their sources are the top-level folders ``rewrite/`` and ``cann_ep/``. The wheel installs them as
real subpackages of ``ort_ops`` (``wheel.packages`` in pyproject.toml maps the folders at build
time), so there the normal import system finds them and nothing here is used. In a source checkout
(``pyproject.toml`` beside ``ort_ops/``) no ``ort_ops/rewrite`` folder exists: a finder, asked only
after the normal ones have not found the name, loads exactly ``ort_ops.rewrite`` and
``ort_ops.cann_ep`` from the top-level folders. Their submodules are then found through the
package's ``__path__`` as usual. (Appending the repo root to ``ort_ops.__path__`` would also make
``ort_ops.tests``, ``ort_ops.models``, ... importable; the finder maps the two names only.)

The same import names therefore work in both, and a user's own ``rewrite`` or ``cann_ep`` package
on ``sys.path`` shadows neither. The old top-level names refuse to import (see the guard at the
top of ``rewrite/__init__.py`` and ``cann_ep/__init__.py``): a second copy of the modules under
another name would hold its own registries and classes.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

SUBPACKAGES = ("rewrite", "cann_ep")


class _SubpackageFinder(importlib.abc.MetaPathFinder):
    def __init__(self, package: str, root: str):
        # only the folders there (the CPU-only build's staged source has no cann_ep/)
        self._folders = {f"{package}.{name}": os.path.join(root, name) for name in SUBPACKAGES
                         if os.path.isfile(os.path.join(root, name, "__init__.py"))}

    def find_spec(self, fullname, path=None, target=None):
        folder = self._folders.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])


def source_root() -> str | None:
    """The checkout holding this ``ort_ops`` (``pyproject.toml`` beside it), or None (installed)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return root if os.path.isfile(os.path.join(root, "pyproject.toml")) else None


def map_subpackages(package: str) -> None:
    """In a source checkout, make ``<package>.rewrite`` and ``<package>.cann_ep`` importable (once)."""
    root = source_root()
    if root is None or any(isinstance(f, _SubpackageFinder) for f in sys.meta_path):
        return
    sys.meta_path.append(_SubpackageFinder(package, root))


def refuse_old_name(name: str) -> None:
    """Raise ImportError unless module ``name`` is imported as ``ort_ops.<subpackage>``."""
    if name.startswith("ort_ops."):
        return
    raise ImportError(
        f"import ort_ops.{name} (from ort_ops import {name}), not {name}: the {name} package is "
        f"installed only as ort_ops.{name}, and a top-level {name!r} would be a second copy of it "
        "(or a package of your own that shadows it)")
