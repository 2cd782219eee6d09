"""ONNX Runtime sessions on the CANN EP with the ``ai.ortops`` library registered."""

from __future__ import annotations

import os
from collections.abc import Mapping

import onnx

import ort_ops
from cann_ep.runtime import PROVIDER, real_cann_present, simulated, use_simulator
from ort_ops.profiling import NodeRun, enable, node_runs

__all__ = ["PROVIDER", "default_provider_options", "node_runs", "session", "NodeRun"]


def default_provider_options(device_id: int = 0) -> dict[str, str]:
    """Single-op mode (``enable_cann_graph=0``): CANN's graph engine cannot take custom-domain
    nodes, while single-op mode looks kernels up in custom-op registries too. ``dump_om_model``
    off so sessions do not write .om files into the working directory."""
    return {"device_id": str(device_id), "enable_cann_graph": "0", "dump_om_model": "0"}


def session(
    model: onnx.ModelProto | bytes | str | os.PathLike,
    device_id: int = 0,
    provider_options: Mapping[str, str] | None = None,
    session_options=None,
    profile_prefix: str | None = None,
):
    """An ``onnxruntime.InferenceSession`` on [CANN, CPU] with the op library registered.

    Loads the ACL simulator first when no real CANN toolkit is present. ``profile_prefix``
    turns on ORT profiling (then ``node_runs(session)`` tells which provider ran each node).
    """
    import onnxruntime as ort

    if PROVIDER not in ort.get_available_providers():
        raise RuntimeError(
            f"this onnxruntime ({ort.__version__}) has no {PROVIDER}: install onnxruntime-cann "
            "in its own environment (scripts/setup.sh makes .venv-cann)"
        )
    if not real_cann_present() and not simulated():
        use_simulator()
    so = ort_ops.register(session_options if session_options is not None else ort.SessionOptions())
    if profile_prefix is not None:
        enable(so, profile_prefix)
    options = default_provider_options(device_id)
    options.update({k: str(v) for k, v in (provider_options or {}).items()})
    if isinstance(model, onnx.ModelProto):
        model = model.SerializeToString()
    elif isinstance(model, os.PathLike):
        model = os.fspath(model)
    return ort.InferenceSession(model, so, providers=[(PROVIDER, options), "CPUExecutionProvider"])
