"""Shared set-up for the CANN EP / ACL simulator tests."""

import pytest


@pytest.fixture(scope="session")
def sim_dir() -> str:
    """Folder of the built simulator libraries (a skip names what is missing)."""
    import ort_ops.cann_ep.sim as sim
    try:
        return sim.library_dir()
    except FileNotFoundError as e:
        pytest.skip(f"ACL simulator not built: {e}")


@pytest.fixture(scope="module")
def cann_simulator():
    """Skips (saying why) without the CANN EP in this onnxruntime or without an ACL runtime; else
    loads the simulator (unless a real CANN toolkit is there). Modules use it with
    ``pytestmark = pytest.mark.usefixtures("cann_simulator")``."""
    import onnxruntime as ort

    from ort_ops import cann_ep

    if "CANNExecutionProvider" not in ort.get_available_providers():
        pytest.skip(f"onnxruntime {ort.__version__} here has no CANNExecutionProvider "
                    "(run these tests in .venv-cann, made by scripts/setup.sh)")
    if not cann_ep.available():
        pytest.skip("no ACL runtime: neither a CANN toolkit (ASCEND_HOME_PATH) nor the built simulator (cann_ep/sim)")
    cann_ep.use_simulator()
