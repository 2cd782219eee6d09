"""The wheel scripts/setup.sh builds (scripts/build_wheel.sh) is one that could be published: a
manylinux platform tag (auditwheel repair), the op library without ONNX Runtime in it, and the
cann_ep package in the full distribution only."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

WHEELHOUSE = Path(__file__).resolve().parents[1] / "build" / "wheelhouse"
# name-version-python-abi-platform.whl; the platform a PEP 600 manylinux tag
WHEEL_NAME = re.compile(r"^(ort_ops(?:_cpu)?)-[^-]+-py3-none-(manylinux_\d+_\d+_x86_64)\.whl$")


def _wheels() -> list[Path]:
    wheels = sorted(WHEELHOUSE.glob("*.whl"))
    if not wheels:
        pytest.skip(f"no wheel in {WHEELHOUSE}: scripts/setup.sh builds it")
    return wheels


def test_wheel_is_manylinux_tagged():
    for wheel in _wheels():
        match = WHEEL_NAME.match(wheel.name)
        assert match, f"{wheel.name}: expected <dist>-<version>-py3-none-manylinux_X_Y_x86_64.whl"
        with zipfile.ZipFile(wheel) as z:
            dist_info = next(n.split("/")[0] for n in z.namelist() if n.endswith(".dist-info/WHEEL"))
            tags = re.findall(r"^Tag: (\S+)$", z.read(f"{dist_info}/WHEEL").decode(), re.MULTILINE)
        assert tags == [f"py3-none-{match[2]}"], f"{wheel.name}: WHEEL tags {tags}"


def test_wheel_contents_match_its_distribution():
    for wheel in _wheels():
        dist = WHEEL_NAME.match(wheel.name)[1] if WHEEL_NAME.match(wheel.name) else wheel.name
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
        assert "ort_ops/libortops.so" in names, f"{wheel.name}: no ort_ops/libortops.so"
        grafted = [n for n in names if "onnxruntime" in n.rsplit("/", 1)[-1] or ".libs/" in n]
        assert not grafted, f"{wheel.name}: libraries grafted by auditwheel: {grafted}"
        has_cann_ep = any(n.startswith("ort_ops/cann_ep/") for n in names)
        assert not [n for n in names if n.split("/")[0] in ("cann_ep", "rewrite")], f"{wheel.name}: old top-level names"
        # the full build ships cann_ep and the simulator; the CPU-only one (ort_ops_cpu) neither
        assert has_cann_ep == (dist == "ort_ops"), f"{wheel.name}: cann_ep present: {has_cann_ep}"
        if dist == "ort_ops":
            assert "ort_ops/cann_ep/sim/lib/libascendcl.so" in names, f"{wheel.name}: no simulator"
