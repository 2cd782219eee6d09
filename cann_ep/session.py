"""ONNX Runtime sessions on the CANN EP with the ``ai.ortops`` library registered."""

from __future__ import annotations

import os
from collections.abc import Mapping

import onnx

import ort_ops
from ort_ops.cann_ep.runtime import PROVIDER, device_count, real_cann_present, simulated, soc_name, use_simulator
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
    *,
    place: bool = True,
    placement_report=None,
    free_dimensions: Mapping[str, int] | None = None,
):
    """An ``onnxruntime.InferenceSession`` on [CANN, CPU] with the op library registered.

    ``place`` (default): the graph is first placed on CANN (:func:`ort_ops.rewrite.placement.place` for
    this device's SoC): nodes the CANN EP would leave on the CPU become ``ai.ortops.cann`` ops
    where a kernel exists. The :class:`~ort_ops.rewrite.placement.PlacementReport` (which node runs
    where, and why the rest stays on the CPU) is ``session.placement`` and fills
    ``placement_report`` if given. ``place=False`` runs the graph as it is. A node the CANN EP
    would take but must not (broadcasting arithmetic, an upstream defect) or cannot run on this
    SoC (its kernel's CANN op is missing) raises :class:`~ort_ops.rewrite.placement.PlacementError` naming
    SoC, node, dtype and op: ORT has no way to send just that node to the CPU EP.

    ``free_dimensions`` (e.g. ``{"batch": 32}``) gives the model's symbolic dimensions sizes before it is
    placed (:func:`ort_ops.rewrite.free_dimensions.fix_dimensions`): the Shape nodes of a
    dynamic-axes export are then computed once instead of copying their inputs to the host every
    run; the session takes inputs of those sizes only.

    Loads the ACL simulator first when no real CANN toolkit is present. ``profile_prefix``
    turns on ORT profiling (then ``node_runs(session)`` tells which provider ran each node).
    ``device_id`` must name an existing NPU (``ValueError`` otherwise: onnxruntime would fall
    back to a CPU-only session); a session that did not get the CANN EP raises ``RuntimeError``.
    """
    import onnxruntime as ort

    from ort_ops.library import has_cann_kernels
    from ort_ops.runtime_check import check_onnxruntime

    check_onnxruntime()
    if PROVIDER not in ort.get_available_providers():
        raise RuntimeError(
            f"this onnxruntime ({ort.__version__}) has no {PROVIDER}: install onnxruntime-cann "
            "in its own environment (pip install 'ort-ops[cann]'; scripts/setup.sh makes .venv-cann)"
        )
    if not has_cann_kernels():
        raise RuntimeError(f"this ort_ops library ({ort_ops.get_library_path()}) was built without its CANN "
                           "kernels (ORTOPS_WITH_CANN=OFF): rebuild with the ACL headers for the CANN EP")
    if not real_cann_present() and not simulated():
        use_simulator()
    so = ort_ops.register(session_options if session_options is not None else ort.SessionOptions())
    if profile_prefix is not None:
        enable(so, profile_prefix)
    provider_options = dict(provider_options or {})
    device_id = check_device_id(provider_options.pop("device_id", device_id))
    options = default_provider_options(device_id)
    options.update({k: str(v) for k, v in provider_options.items()})
    report = None
    if free_dimensions is not None:
        from ort_ops.rewrite.free_dimensions import fix_dimensions

        model = fix_dimensions(_model_proto(model), free_dimensions)
    if place:
        from ort_ops.rewrite.placement import PlacementReport
        from ort_ops.rewrite.placement import place as place_graph

        model = _model_proto(model)
        report = placement_report if placement_report is not None else PlacementReport()
        folds = so.graph_optimization_level != ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        model = place_graph(model, soc=soc_name(), report=report, folds_constants=folds)
        report.check()  # nodes the CANN EP would run wrong or fail on: PlacementError, no session
    if isinstance(model, onnx.ModelProto):
        model = model.SerializeToString()
    elif isinstance(model, os.PathLike):
        model = os.fspath(model)
    sess = ort.InferenceSession(model, so, providers=[(PROVIDER, options), "CPUExecutionProvider"],
                                disabled_optimizers=list(NODE_CREATING_OPTIMIZERS) if place else None)
    if PROVIDER not in sess.get_providers():
        raise RuntimeError(f"onnxruntime created the session without {PROVIDER} (providers: "
                           f"{sess.get_providers()}); see its error message above")
    sess.placement = report
    return sess


#: onnxruntime graph optimizers that make new nodes after placement, which the CANN EP has no kernel for, so
#: they run on the CPU EP where the placement report says CANN (issue 23: MatMul + Add -> Gemm, which the
#: 1.24 wheel's CANN EP registers for float16 only; Gather + Slice -> Split). Off in placed sessions.
NODE_CREATING_OPTIMIZERS = ("MatMulAddFusion", "GatherSliceToSplitFusion")


def _model_proto(model) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        return model
    return onnx.load_from_string(model) if isinstance(model, bytes) else onnx.load(os.fspath(model))


def check_device_id(device_id) -> int:
    """``device_id`` as an int if it names an NPU of this machine, else ``ValueError``/``TypeError``
    naming the id and the number of devices."""
    if isinstance(device_id, bool) or not isinstance(device_id, (int, str)):
        raise TypeError(f"device_id must be an int, got {type(device_id).__name__} {device_id!r}")
    try:
        value = int(device_id)
    except ValueError:
        raise ValueError(f"device_id {device_id!r} is not an integer") from None
    count = device_count()
    if not 0 <= value < count:
        have = {0: "none", 1: "device id 0"}.get(count, f"device ids 0 to {count - 1}")
        raise ValueError(f"device_id {value} does not exist: the ACL runtime reports {count} NPU(s) "
                         f"({have})")
    return value
