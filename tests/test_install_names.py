"""Install names (issue 20): every import name the wheel installs lives under ``ort_ops``, so a
user's own ``rewrite`` or ``cann_ep`` package shadows neither ``ort_ops.rewrite`` nor
``ort_ops.cann_ep``; the console script works; the old top-level names are not installed, and in
a source checkout they refuse to import (they would be a second copy of the modules)."""

# ns_rename: leave this file (it imports the old names on purpose: the rename script skips it)
from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest

from installed import ROOT, USER_MARK, console_script, installed_package_dir, python_as_user, run_as_user, user_folder

# Imports the user's packages first (proof that cwd comes first on sys.path, so the check below
# can fail), then ort-ops' own subpackages, and reports where each module came from.
USER_CODE = """
import json, sys
import rewrite, cann_ep
from ort_ops import cann_ep as ep
from ort_ops import rewrite as rw
from ort_ops.rewrite import placement
from ort_ops.rewrite.placement import place
print(json.dumps({"user": [rewrite.OWNER, cann_ep.OWNER], "rewrite": rw.__file__, "cann_ep": ep.__file__,
                  "placement": placement.__file__, "has_place": callable(place),
                  "has_session": callable(ep.session)}))
"""


def test_user_packages_shadow_nothing_installed(tmp_path):
    package = installed_package_dir()
    r = python_as_user(USER_CODE, user_folder(tmp_path))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["user"] == [USER_MARK, USER_MARK]  # the user's packages are the ones named rewrite, cann_ep
    assert got["rewrite"] == str(package / "rewrite" / "__init__.py")
    assert got["cann_ep"] == str(package / "cann_ep" / "__init__.py")
    assert got["placement"] == str(package / "rewrite" / "placement" / "__init__.py")
    assert got["has_place"] and got["has_session"]


def test_python_m_ort_ops_rewrite_runs_beside_a_user_rewrite_package(tmp_path):
    installed_package_dir()
    r = run_as_user([sys.executable, "-m", "ort_ops.rewrite", "--help"], user_folder(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: ortops-rewrite"), r.stdout[:300]
    for command in ("fuse", "lower", "inspect"):
        assert command in r.stdout


def test_console_script_runs(tmp_path):
    installed_package_dir()
    folder = user_folder(tmp_path)
    r = run_as_user([console_script("ortops-rewrite"), "--version"], folder)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"ortops-rewrite (ort-ops {metadata.version('ort-ops')})"
    r = run_as_user([console_script("ortops-rewrite"), "inspect", "--help"], folder)
    assert r.returncode == 0 and r.stdout.startswith("usage: ortops-rewrite inspect"), r.stderr or r.stdout


def test_wheel_installs_no_top_level_rewrite_or_cann_ep():
    installed_package_dir()
    files = [str(f) for f in metadata.distribution("ort-ops").files]
    # (scripts sit outside site-packages: ../../bin/ortops-rewrite)
    tops = {f.split("/")[0] for f in files if "/" in f and not f.startswith("..")} - {
        f.split("/")[0] for f in files if f.split("/")[0].endswith(".dist-info")}
    assert tops == {"ort_ops"}, sorted(tops)
    for module in ("ort_ops/rewrite/__init__.py", "ort_ops/rewrite/placement/__init__.py",
                   "ort_ops/cann_ep/__init__.py", "ort_ops/cann_ep/sim/__init__.py"):
        assert module in files, f"{module} not in the installed wheel"
    entry = [e for e in metadata.distribution("ort-ops").entry_points if e.name == "ortops-rewrite"]
    assert [e.value for e in entry] == ["ort_ops.rewrite.cli:main"]


@pytest.mark.parametrize("old", ["rewrite", "cann_ep", "cann_ep.sim", "rewrite.placement"])
def test_old_names_in_a_checkout_refuse_to_import(old):
    # from the checkout root the folders rewrite/ and cann_ep/ are on sys.path by their old names
    code = (f"import sys\ntry:\n    import {old}\nexcept ImportError as e:\n    print(e)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rewrite', 'cann_ep')))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    message, modules = r.stdout.strip().splitlines()
    top = old.split(".")[0]
    assert f"import ort_ops.{top} (from ort_ops import {top}), not {top}" in message
    assert modules == "[]"  # no module loaded under an old name


def test_checkout_maps_only_the_two_subpackages():
    code = ("import json, ort_ops.rewrite.placement, ort_ops.cann_ep.sim\n"
            "try:\n    import ort_ops.tests\n    leak = True\nexcept ImportError:\n    leak = False\n"
            "print(json.dumps([ort_ops.rewrite.__file__, ort_ops.cann_ep.sim.__file__, leak]))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rewrite_file, sim_file, leak = json.loads(r.stdout)
    assert rewrite_file == str(ROOT / "rewrite" / "__init__.py")
    assert sim_file == str(ROOT / "cann_ep" / "sim" / "__init__.py")
    assert not leak  # the repo root is not a search path of ort_ops: no ort_ops.tests, ort_ops.models
