"""Place graphs on the CANN EP: standard ONNX nodes the CANN EP would leave on the CPU become
``ai.ortops.cann`` ops whose kernels run CANN single ops (see :mod:`ort_ops.rewrite.placement.place`).

    from ort_ops.rewrite.placement import place, unplace, PlacementReport

    report = PlacementReport()
    placed = place(model, soc="Ascend910B1", report=report)
    print(report.summary())            # what runs where, and why the rest stays on the CPU
    assert unplace(placed) == model     # (up to folded constants)

``cann_ep.session`` applies it by default. Rules: one module per op family in
:mod:`ort_ops.rewrite.placement.ops`, kernels in ``ort_ops/csrc/placed/``.
"""

from ort_ops.rewrite.placement.place import (
    MAX_CONSTANT_ELEMENTS,
    NodePlacement,
    PlacementError,
    PlacementReport,
    ep_runs,
    place,
    unplace,
)

__all__ = ["MAX_CONSTANT_ELEMENTS", "NodePlacement", "PlacementError", "PlacementReport", "ep_runs", "place",
           "unplace"]
