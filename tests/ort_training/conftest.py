"""The ORT-training tests run in .venv-ort-training (onnxruntime-training-cpu 1.19.2, onnx 1.17,
Python <= 3.11; scripts/setup.sh). Elsewhere they are skipped with the reason."""

import pytest

try:
    from onnxruntime.capi import _pybind_state

    _TRAINING = hasattr(_pybind_state, "register_gradient_definition")
    _WHY = "" if _TRAINING else "this onnxruntime is not onnxruntime-training (run them with .venv-ort-training)"
except ImportError as error:
    _TRAINING, _WHY = False, f"no onnxruntime ({error}); run them with .venv-ort-training"


def pytest_collection_modifyitems(config, items):
    if _TRAINING:
        return
    skip = pytest.mark.skip(reason=_WHY)
    for item in items:
        if "ort_training" in str(item.path):
            item.add_marker(skip)
