"""Models are written with an IR version the running onnxruntime reads.

The expected IR per runtime comes from the runtimes themselves (docs/compatibility.md, measured by
scripts/compat_matrix.sh): 1.17.3 refuses IR 10 ("Unsupported model IR version: 10, max supported
IR version: 9"), 1.18.1 and every newer runtime tested reads IR 10. scripts/check_old_runtime.py
checks it on a real 1.17 / 1.19.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnxruntime as ort
import pytest

import ort_ops
from ort_ops import domain
from ort_ops.model_builder import make_op_model

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.python_only
@pytest.mark.parametrize(
    "version, expected",
    [("1.17.3", 9), ("1.17.0", 9), ("1.18.1", 10), ("1.19.2", 10), ("1.24.4", 10), ("1.31.1", 10), ("2.0.0", 10),
     (None, 9), ("not-a-version", 9)],
)
def test_max_ir_version_per_runtime(version, expected):
    assert domain.max_ir_version(version) == expected, f"onnxruntime {version}"


def test_running_runtime_reads_the_models_written():
    assert domain.IR_VERSION == domain.max_ir_version(ort.__version__)
    model = make_op_model("EluGrad")
    assert model.ir_version == domain.IR_VERSION
    so = ort_ops.register(ort.SessionOptions())
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _in_child(code: str, pythonpath: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         cwd=str(REPO))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.python_only
def test_version_read_without_importing_onnxruntime():
    got = _in_child(
        "import json, sys; import ort_ops.domain as d; "
        "print(json.dumps([d.installed_onnxruntime_version(), 'onnxruntime' in sys.modules]))",
        [str(REPO)],
    )
    assert got == [ort.__version__, False]


@pytest.mark.python_only
def test_old_runtime_gets_ir_9_models(tmp_path):
    """A stand-in onnxruntime 1.17.3 module first on the path: the model builder writes IR 9."""
    fake = tmp_path / "onnxruntime"
    fake.mkdir()
    (fake / "__init__.py").write_text('__version__ = "1.17.3"\n')
    got = _in_child(
        "import json; from ort_ops import domain; from ort_ops.model_builder import make_op_model; "
        "print(json.dumps([domain.installed_onnxruntime_version(), domain.IR_VERSION, "
        "make_op_model('EluGrad').ir_version]))",
        [str(tmp_path), str(REPO)],
    )
    assert got == ["1.17.3", 9, 9]


@pytest.mark.python_only
def test_no_runtime_gets_the_oldest_runtimes_ir(tmp_path):
    """No onnxruntime importable (a None entry in sys.modules blocks it): IR 9, read by every runtime."""
    got = _in_child(
        "import json, sys; sys.modules['onnxruntime'] = None; from ort_ops import domain; "
        "print(json.dumps([domain.installed_onnxruntime_version(), domain.IR_VERSION]))",
        [str(REPO)],
    )
    assert got == [None, domain.OLDEST_RUNTIME_IR_VERSION]
