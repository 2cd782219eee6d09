"""Loading and atomically saving models, keeping external data working."""

from __future__ import annotations

import os
import tempfile

import onnx
from onnx.external_data_helper import uses_external_data


class ModelError(Exception):
    """An input model that cannot be read or is not valid ONNX (message: one line)."""


def load(path: str) -> onnx.ModelProto:
    """The model at ``path`` (external data not loaded) after ``onnx.checker``; else ModelError."""
    try:
        model = onnx.load(path, load_external_data=False)
    except FileNotFoundError:
        raise ModelError(f"{path}: no such file") from None
    except Exception as exc:  # noqa: BLE001 - protobuf raises several types
        raise ModelError(f"{path}: not a readable ONNX model ({type(exc).__name__})") from None
    if not model.HasField("graph"):
        raise ModelError(f"{path}: not a readable ONNX model (no graph)")
    try:
        onnx.checker.check_model(path)
    except Exception as exc:  # noqa: BLE001
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{path}: invalid ONNX model: {first}") from None
    return model


def _external(model: onnx.ModelProto) -> list:
    return [t for t in model.graph.initializer if uses_external_data(t)]


def save(model: onnx.ModelProto, path: str, source_path: str | None = None) -> None:
    """Write ``model`` to ``path`` atomically (temp file + ``os.replace``).

    External-data initializers keep pointing at their files when ``path`` is in the same
    directory as ``source_path``; otherwise their data is loaded from ``source_path``'s
    directory and written next to ``path`` as ``<name>.data`` (also atomically).
    """
    out_dir = os.path.dirname(os.path.abspath(path))
    src_dir = os.path.dirname(os.path.abspath(source_path)) if source_path else out_dir
    external = _external(model)
    data_tmp = None
    if external and src_dir != out_dir:
        model = onnx.ModelProto.FromString(model.SerializeToString())
        onnx.load_external_data_for_model(model, src_dir)
        location = os.path.basename(path) + ".data"
        fd, data_tmp = tempfile.mkstemp(dir=out_dir, prefix=".tmp-", suffix=".data")
        os.close(fd)
        onnx.external_data_helper.convert_model_to_external_data(
            model, all_tensors_to_one_file=True, location=os.path.basename(data_tmp), size_threshold=0)
        onnx.external_data_helper.write_external_data_tensors(model, out_dir)
        for tensor in model.graph.initializer:
            for entry in tensor.external_data:
                if entry.key == "location":
                    entry.value = location
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".tmp-", suffix=".onnx")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(model.SerializeToString())
        if data_tmp:
            os.replace(data_tmp, os.path.join(out_dir, location))
        os.replace(tmp, path)
    except BaseException:
        for leftover in (tmp, data_tmp):
            if leftover and os.path.exists(leftover):
                os.unlink(leftover)
        raise
