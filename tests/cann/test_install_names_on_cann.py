"""Issue 20's report: a user's own ``rewrite/`` package (cwd first on sys.path) broke
``cann_ep.session(...)`` (``No module named 'rewrite.placement'``). With the install names under
``ort_ops``, the INSTALLED ``ort_ops.cann_ep.session`` places and runs a graph on the simulator from
such a folder, with the simulator libraries found where the wheel put them."""

# ns_rename: leave this file (it imports the old names on purpose: the rename script skips it)
from __future__ import annotations

import json

import pytest

from installed import USER_MARK, installed_package_dir, python_as_user, user_folder

ort = pytest.importorskip("onnxruntime")

# dX = EluGrad(dY, Y){alpha} = Where(Less(Y, 0), dY * (Y + alpha), dY) (docs/compatibility.md), in NumPy.
USER_CODE = """
import json
import numpy as np
import rewrite, cann_ep
from ort_ops import cann_ep as ep
from ort_ops.model_builder import make_elu_grad_model
assert ep.use_simulator(), "a real CANN toolkit is present: this test is for the simulator"
sess = ep.session(make_elu_grad_model("float32", (4, 2), 0.5))
dy = np.arange(1, 9, dtype=np.float32).reshape(4, 2)
y = np.array([[-1, 2], [0, -0.25], [3, -2], [0.5, -0.5]], dtype=np.float32)
(got,) = sess.run(None, dict(zip([i.name for i in sess.get_inputs()], (dy, y))))
want = np.where(y < 0, dy * (y + np.float32(0.5)), dy)
import ort_ops.cann_ep.sim as sim
print(json.dumps({"user": [rewrite.OWNER, cann_ep.OWNER], "equal": bool(np.array_equal(got, want)),
                  "placement": sess.placement.summary() != "", "sim": sim.library_dir(), "cann_ep": ep.__file__}))
"""


def test_installed_session_runs_beside_a_user_rewrite_package(tmp_path):
    if "CANNExecutionProvider" not in ort.get_available_providers():
        pytest.skip(f"onnxruntime {ort.__version__} here has no CANNExecutionProvider (run in .venv-cann)")
    package = installed_package_dir()
    r = python_as_user(USER_CODE, user_folder(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["user"] == [USER_MARK, USER_MARK]
    assert got["cann_ep"] == str(package / "cann_ep" / "__init__.py")
    assert got["sim"] == str(package / "cann_ep" / "sim" / "lib")  # the install DESTINATION, found there
    assert got["equal"] and got["placement"]
