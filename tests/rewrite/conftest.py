"""Fixtures shared by the rewrite tests."""

import pytest


@pytest.fixture(scope="module")
def fast_exports():
    """PyTorch exports in the module list torchlib's functions once (graphs_training.torchlib_listed_once);
    modules use it with ``pytestmark = pytest.mark.usefixtures("fast_exports")``."""
    from graphs_training import torchlib_listed_once

    with torchlib_listed_once():
        yield
