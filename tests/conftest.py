"""Fixtures shared by the op tests (helpers live in op_helpers.py)."""

import pytest


@pytest.fixture(params=["float32", "float16", "bfloat16"])
def dtype(request) -> str:
    return request.param
