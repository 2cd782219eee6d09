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
