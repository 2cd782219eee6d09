"""Known defects of the onnxruntime-cann 1.24.4 CANN EP's own kernels: nodes the EP takes (its kernel
table, :mod:`ort_ops.rewrite.placement.cann_ep_kernels`) but runs wrongly or not at all.

One table, :data:`DEFECTS`: per entry the ONNX op type, a predicate over the placement pass's
:class:`~ort_ops.rewrite.placement.rule.NodeInfo` saying whether a node may hit the defect (conservative:
an unknown shape or rank counts as a hit where the defect depends on it), what goes wrong, and where
(the provider source, ``microsoft/onnxruntime`` ``onnxruntime/core/providers/cann/``, and the CANN op
spec it contradicts). :func:`defect_of` is what the placement pass asks. Checked against the
simulator by ``tests/cann/test_ep_kernels_on_sim.py`` (its failing cases must be flagged here, the
ones not flagged must pass); unit tests in ``tests/rewrite/test_ep_defects.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ort_ops.rewrite.placement.rule import NodeInfo


@dataclass(frozen=True)
class EpDefect:
    """The CANN EP's ``op_type`` kernel goes wrong on the nodes ``hits`` is true for."""

    op_type: str
    hits: Callable[[NodeInfo], bool]
    reason: str
    source: str


def _rank(info: NodeInfo, index: int = 0) -> int | None:
    shape = info.input_shapes[index] if index < len(info.input_shapes) else None
    return None if shape is None else len(shape)


def _not_4d(info: NodeInfo) -> bool:
    """Input 0 is not 4-D, or its rank is unknown."""
    return _rank(info) != 4


def _static(shape: tuple | None) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


def _shapes_differ(info: NodeInfo) -> bool:
    """The two inputs' shapes differ or are not both static (then they may broadcast)."""
    a, b = (info.input_shapes + [None, None])[:2]
    return not (_static(a) and _static(b) and tuple(a) == tuple(b))


def _pads(info: NodeInfo) -> list[int]:
    return list(info.attr("pads") or [])


def _auto_pad(info: NodeInfo) -> str:
    return info.attr("auto_pad", "NOTSET") or "NOTSET"


def _pads_misread(info: NodeInfo) -> bool:
    """The ONNX pads [top, left, bottom, right] read as CANN's [top, bottom, left, right] differ
    (left != bottom), or SAME_LOWER (sent as CANN's SAME, which pads like SAME_UPPER)."""
    pads = _pads(info)
    return (len(pads) == 4 and pads[1] != pads[2]) or _auto_pad(info) == "SAME_LOWER"


def _average_pool_hits(info: NodeInfo) -> bool:
    """Any padding (explicit pads, SAME_*), where the divisor depends on exclusive (and the pads'
    order); or not 4-D."""
    return any(p != 0 for p in _pads(info)) or _auto_pad(info).startswith("SAME") or _not_4d(info)


def _max_pool_hits(info: NodeInfo) -> bool:
    return _pads_misread(info) or _not_4d(info)


def _conv_hits(info: NodeInfo) -> bool:
    return _not_4d(info) or _pads_misread(info) or _auto_pad(info).startswith("SAME")


def _dropout_training(info: NodeInfo) -> bool:
    """Opset 12+ Dropout with a training_mode input that is not a constant false."""
    if info.opset < 12 or not info.present(2):
        return False
    value = info.constants[2] if len(info.constants) > 2 else None
    return value is None or bool(value.reshape(-1)[0])


def _batch_norm_hits(info: NodeInfo) -> bool:
    training = bool(info.attr("training_mode", 0)) or any(o for o in info.node.output[1:])
    return _not_4d(info) or training or info.attr("spatial", 1) == 0


_BINARY_REASON = ("the CANN EP's {op} kernel broadcasts an input whose shape differs from the output's into a "
                  "scratch buffer it frees before the launch; with both inputs broadcast the second reuses the "
                  "first's memory and the kernel computes B op B (b {op} b; seen on the simulator; inputs whose shapes "
                  "differ or are not static may broadcast)")
_BINARY_SOURCE = "onnxruntime cann/math/binary_elementwise_ops.cc with cann_utils.cc Broadcast<T>"
_NOT_4D = "4-D NCHW only (CANN {cann}: 4-D input; ksize/strides [1, 1, h, w])"

#: every known defect of the CANN EP's own kernels (an op may have several entries)
DEFECTS: tuple[EpDefect, ...] = (
    *(EpDefect(op, _shapes_differ, _BINARY_REASON.format(op=op), _BINARY_SOURCE)
      for op in ("Add", "Sub", "Mul", "Div")),
    EpDefect("AveragePool", _average_pool_hits,
             "the CANN EP's AveragePool kernel sets AvgPoolV2's exclusive from count_include_pad (inverted), so with "
             "padding (pads, SAME_*) the averages use the wrong divisor; it passes the pads in ONNX's "
             "order [top, left, bottom, right], which AvgPoolV2 reads as [top, bottom, left, right]; and it sends "
             "non-4-D input to AvgPoolV2 with ksize of rank + 2 values (AvgPoolV2: 4-D, ksize [1, 1, h, w])",
             "onnxruntime cann/nn/average_pool.cc; CANN AvgPoolV2 (GE nn_pooling_ops.h: exclusive = true "
             "excludes padding)"),
    EpDefect("GlobalAveragePool", _not_4d,
             "the CANN EP's GlobalAveragePool kernel sends non-4-D input to AvgPoolV2 with NCHW attributes "
             "(ksize of rank + 2 values); " + _NOT_4D.format(cann="AvgPoolV2"),
             "onnxruntime cann/nn/average_pool.cc"),
    EpDefect("MaxPool", _max_pool_hits,
             "the CANN EP's MaxPool kernel passes the pads in ONNX's order [top, left, bottom, right], which "
             "MaxPoolV3 reads as [top, bottom, left, right] (wrong windows when left != bottom), sends SAME_LOWER "
             "as SAME (CANN pads like SAME_UPPER), and sends non-4-D input with ksize of rank + 2 values; "
             + _NOT_4D.format(cann="MaxPoolV3"),
             "onnxruntime cann/nn/max_pool.cc; hicann/ops-nn pooling/max_pool_v3/op_graph/max_pool_v3_proto.h "
             "(pads [top, bottom, left, right], 4-D x)"),
    EpDefect("GlobalMaxPool", _not_4d,
             "the CANN EP's GlobalMaxPool kernel sends non-4-D input to MaxPoolV3 with ksize of rank + 2 values; "
             + _NOT_4D.format(cann="MaxPoolV3"),
             "onnxruntime cann/nn/max_pool.cc; hicann/ops-nn pooling/max_pool_v3/op_graph/max_pool_v3_proto.h"),
    EpDefect("Conv", _conv_hits,
             "the CANN EP's Conv kernel sends 3-D input to Conv2D (4-D only) and 5-D input to Conv3D with NCHW "
             "descriptors (Conv3D: NCDHW / NDHWC), and passes pads in ONNX's order [top, left, bottom, right] "
             "where Conv2D reads [top, bottom, left, right] (wrong with left != bottom; SAME_* pads may be "
             "asymmetric)",
             "onnxruntime cann/nn/conv.cc; CANN Conv2D / Conv3D (GE nn_calculation_ops.h)"),
    EpDefect("BatchNormalization", _batch_norm_hits,
             "the CANN EP's BatchNormalization kernel describes x with NCHW (BatchNorm: 4-D NCHW / NHWC, so non-4-D "
             "input fails), scale/B/mean/var as 1-D (spatial = 0's [C, H, W] parameters are misread), and in "
             "training mode writes the running mean / variance to scratch buffers, never to outputs 1..4",
             "onnxruntime cann/nn/batch_norm.cc; CANN BatchNorm (GE nn_norm_ops.h)"),
    EpDefect("Dropout", _dropout_training,
             "the CANN EP's Dropout kernel in training mode describes DropoutV2's mask as ACL_BOOL and sets p with "
             "aclopSetAttrInt (0.5 becomes 0); DropoutV2 has a float32 mask and a Float p, so the launch fails "
             "(a training_mode input that is not a constant false may be true)",
             "onnxruntime cann/nn/dropout.cc; GE random_ops.h DropoutV2"),
)


def defect_of(info: NodeInfo) -> str | None:
    """Why the CANN EP's own kernel for ``info``'s node is known to go wrong (reason and source),
    or None if no known defect applies. Nodes outside ai.onnx have no EP kernel here: None."""
    node = info.node
    if node.domain not in ("", "ai.onnx"):
        return None
    for d in DEFECTS:
        if d.op_type == node.op_type and d.hits(info):
            return f"{d.reason} ({d.source})"
    return None
