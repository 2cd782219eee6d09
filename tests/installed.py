"""Running code against the INSTALLED ort-ops, as a user would: from a folder outside the checkout
that holds the user's own ``rewrite`` and ``cann_ep`` packages (first on ``sys.path``), without
the checkout on PYTHONPATH and without the dev-build overrides (issue 20: install names)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The user's packages say whose they are; the old top-level names of ort-ops' own subpackages.
USER_PACKAGES = ("rewrite", "cann_ep")
USER_MARK = "the user's own package"


def installed_package_dir() -> Path:
    """``site-packages/ort_ops`` of the installed distribution; fails (with what to do) when the
    installed wheel predates the ort_ops namespace layout."""
    dist = metadata.distribution("ort-ops")
    package = Path(str(dist.locate_file("ort_ops")))
    if not (package / "rewrite" / "__init__.py").is_file():
        raise AssertionError(f"the installed ort-ops ({package}) has no ort_ops/rewrite: it was built "
                             "before the ort_ops namespace layout; run `bash scripts/setup.sh` to reinstall it")
    return package


def user_folder(tmp_path: Path) -> Path:
    """A folder outside the checkout with the user's own ``rewrite/`` and ``cann_ep/`` packages."""
    folder = tmp_path / "user"
    for name in USER_PACKAGES:
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text(f"OWNER = {USER_MARK!r}\n")
    assert ROOT not in folder.resolve().parents
    return folder


def run_as_user(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``args`` in ``cwd`` with the installed package only: no PYTHONPATH, no ORTOPS_LIBRARY /
    ACLSIM_LIBRARY_DIR (the installed libraries are found where the wheel put them)."""
    drop = ("PYTHONPATH", "ORTOPS_LIBRARY", "ACLSIM_LIBRARY_DIR")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.setdefault("ORT_DISABLE_TELEMETRY", "1")
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def python_as_user(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -c code`` as a user: ``cwd`` (with the user's packages) is first on sys.path."""
    return run_as_user([sys.executable, "-c", code], cwd)


def console_script(name: str) -> str:
    """The console script ``name`` of this interpreter's environment."""
    path = Path(sys.executable).parent / name
    assert path.is_file(), f"console script {name} not installed next to {sys.executable}"
    return str(path)
