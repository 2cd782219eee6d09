"""Edge cases of placed Conv and ConvTranspose (1-D input as (N, C, 1, L) on CANN's 2-D ops) on the
CANN EP (the ACL simulator): shapes that do not fit fail naming the node and the reason, forms the
kernels do not take are not placed and say why, empty batches, and which 2-D Convs stay on the CANN
EP's own kernel. Expected values come from the CPU EP on the same one-node model."""

from __future__ import annotations

import numpy as np
import pytest

from ort_ops import tolerances
from ort_ops.rewrite.placement import PlacementError, PlacementReport, place

cann_ep = pytest.importorskip("ort_ops.cann_ep")
edge = pytest.importorskip("test_placed_ops_edge_cases_on_cann")
one_node, feeds_of, cpu_and_placed = edge.one_node, edge.feeds_of, edge.cpu_and_placed

pytestmark = pytest.mark.usefixtures("cann_simulator")
RNG = np.random.default_rng(23)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def entry_of(model):
    report = PlacementReport()
    place(model, report=report)
    (entry,) = report.nodes
    return entry


@pytest.mark.parametrize("inputs, attrs, why", [
    ([f32(1, 2, 3), f32(4, 2, 5)], {}, r"padded input \(3 along spatial axis 0\) is shorter than the dilated kernel "
                                       r"\(5\)"),
    ([f32(1, 2, 8), f32(4, 2, 3)], {"dilations": [4]}, r"shorter than the dilated kernel \(9\)"),
    ([f32(1, 6, 8), f32(4, 4, 3)], {"group": 2}, r"X \[1, 6, 8\] and W \[4, 4, 3\] do not fit group 2"),
    ([f32(1, 4, 8), f32(3, 2, 3)], {"group": 2}, r"W's dim 0 divisible by group"),
    ([f32(1, 2, 8), f32(4, 2, 3), f32(3)], {}, r"B \[3\] must have one value per output channel \(4\)"),
    ([f32(1, 2, 8), f32(4, 2, 3, 1)], {},
     r"are not a 1-D \(N, C, L\), 2-D \(N, C, H, W\) or 3-D \(N, C, D, H, W\) convolution"),
    ([f32(1, 2, 8), f32(4, 2, 3)], {"kernel_shape": [2]}, r"kernel_shape \[2\] does not match W \[4, 2, 3\]"),
])
def test_conv_shapes_that_do_not_fit_fail_naming_the_node(inputs, attrs, why):
    # symbolic shapes: ONNX's shape inference cannot refuse them first, the kernel sees them
    model = one_node("Conv", inputs, attrs, symbolic=True, name="tcn")
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    with pytest.raises(Exception, match=r"Conv node 'tcn' on CANN: .*" + why):
        session.run(None, feeds_of(inputs))


@pytest.mark.parametrize("attrs, why", [
    ({"strides": [0]}, r"strides \[0\] must be >= 1"),
    ({"pads": [1, 1, 1]}, r"are not of one spatial rank 1 to 3"),
    ({"strides": [1], "dilations": [1, 1]}, r"are not of one spatial rank 1 to 3"),
    ({"auto_pad": "SAME_UPPER", "dilations": [2]}, r"the pads are not defined for a dilated kernel"),
])
def test_conv_attributes_that_do_not_fit_fail_at_creation_naming_the_node(attrs, why):
    # the rule does not look at these (ORT or ONNX's checker would refuse most first); the kernel does
    from onnx import helper

    from ort_ops.domain import CANN_DOMAIN
    model = one_node("Conv", [f32(1, 2, 8), f32(4, 2, 3)], attrs, symbolic=True, name="tcn")
    node = model.graph.node[0]
    node.domain = CANN_DOMAIN
    model.opset_import.append(helper.make_opsetid(CANN_DOMAIN, 1))
    with pytest.raises(Exception, match=r"Conv node 'tcn' on CANN: .*" + why):
        cann_ep.session(model, place=False)


def test_conv_attributes_of_another_rank_than_the_input_fail_naming_the_node():
    from onnx import helper

    from ort_ops.domain import CANN_DOMAIN
    inputs = [f32(1, 2, 8, 8), f32(4, 2, 3, 3)]
    model = one_node("Conv", inputs, {"strides": [2]}, name="tcn")
    model.graph.node[0].domain = CANN_DOMAIN  # as placed (ONNX's shape inference would refuse it first)
    model.opset_import.append(helper.make_opsetid(CANN_DOMAIN, 1))
    with pytest.raises(Exception, match=r"Conv node 'tcn' on CANN: the attributes are 1-D, the input has 2 spatial "
                                        r"dims"):
        cann_ep.session(model, place=False).run(None, feeds_of(inputs))


def test_conv_same_with_dilations_is_not_placed_and_says_why():
    model = one_node("Conv", [f32(1, 2, 8), f32(4, 2, 3)], {"auto_pad": "SAME_UPPER", "dilations": [2]})
    entry = entry_of(model)
    assert entry.where == "cann_ep" and "not defined for dilated kernels" in entry.reason, entry
    assert "sends 3-D input to Conv2D" in entry.error, entry  # so the session is refused, naming both
    with pytest.raises(PlacementError, match="not defined for dilated kernels"):
        cann_ep.session(model)


def test_conv_3d_is_conv3d_v2():
    model = one_node("Conv", [f32(1, 2, 4, 4, 4), f32(3, 2, 2, 2, 2)])
    entry = entry_of(model)
    assert entry.where == "placed" and entry.cann_ops == ("Conv3DV2",), entry


def test_conv_3d_beyond_conv3d_v2_limits_keeps_the_ep_defect():
    model = one_node("Conv", [f32(1, 2, 4, 4, 70), f32(3, 2, 2, 2, 2)], {"strides": [1, 1, 64]})
    entry = entry_of(model)
    assert entry.where == "cann_ep" and "Conv3DV2's limits" in entry.reason, entry
    assert "Conv3D" in entry.error, entry


@pytest.mark.parametrize("attrs, where", [
    ({"pads": [1, 1, 1, 1]}, "cann_ep"),  # the EP's own kernel does it right
    ({}, "cann_ep"),
    ({"pads": [1, 0, 1, 0]}, "placed"),  # left != bottom: the EP's kernel misreads the pads
    ({"auto_pad": "SAME_UPPER"}, "placed"),  # the EP's kernel sends SAME_* pads in ONNX's order
])
def test_2d_conv_stays_on_the_ep_unless_its_kernel_has_a_defect(attrs, where):
    inputs = [f32(1, 2, 6, 7), f32(3, 2, 2, 3)]
    entry = entry_of(one_node("Conv", inputs, attrs))
    assert entry.where == where and not entry.error, entry
    if where == "placed":
        want, got = cpu_and_placed(one_node("Conv", inputs, attrs), feeds_of(inputs))
        assert tolerances.check(got[0], want[0]).ok


@pytest.mark.parametrize("op, w", [("Conv", f32(4, 2, 3)), ("ConvTranspose", f32(2, 4, 3))])
@pytest.mark.parametrize("symbolic", [False, True])
def test_empty_batch_is_empty(op, w, symbolic):
    inputs = [np.zeros((0, 2, 8), np.float32), w]
    model = one_node(op, inputs, {"pads": [1, 1]}, symbolic=symbolic)
    want, got = cpu_and_placed(model, feeds_of(inputs))
    assert got[0].shape == want[0].shape == (0, 4, 8 if op == "Conv" else 8), (got[0].shape, want[0].shape)


def test_conv_of_an_empty_length_fails_naming_the_node():
    # (N, C, 0) padded to the kernel's length: the output is not empty (ONNX: the bias); not launched
    inputs = [np.zeros((1, 2, 0), np.float32), f32(4, 2, 3)]
    model = one_node("Conv", inputs, {"pads": [2, 2]}, symbolic=True, name="tcn")
    with pytest.raises(Exception, match=r"Conv node 'tcn' on CANN: X \[1, 2, 0\] is empty but the output "
                                        r"\[1, 4, 2\] is not"):
        cann_ep.session(model).run(None, feeds_of(inputs))


@pytest.mark.parametrize("attrs, why", [
    ({"auto_pad": "SAME_UPPER", "dilations": [2]}, "not defined for dilated kernels"),
    ({"auto_pad": "SAME"}, "not an ONNX auto_pad"),
])
def test_conv_transpose_1d_not_placed_says_why(attrs, why):
    entry = entry_of(one_node("ConvTranspose", [f32(1, 2, 8), f32(2, 4, 3)], attrs))
    assert entry.where != "placed" and why in str(entry.reason), entry


@pytest.mark.parametrize("inputs, attrs, why", [
    ([f32(1, 2, 8), f32(2, 4, 3)], {"output_padding": [2], "strides": [2]},
     r"output_padding \[2\] must be >= 0 and smaller than the stride or the dilation"),
    ([f32(1, 2, 2), f32(2, 4, 3)], {"pads": [3, 3]}, r"the output would be empty: \[1, 4, -2\]"),
    ([f32(1, 3, 8), f32(3, 4, 3)], {"group": 2}, r"channels are not divisible by group 2"),
    ([f32(1, 2, 3), f32(2, 4, 3)], {"output_shape": [12]},
     r"output size 12 along spatial axis 0 needs a negative begin pad \(-3\)"),
    ([f32(1, 2, 3), f32(2, 4, 3)], {"output_shape": [1, 4, 5, 5]}, r"output_shape \[1, 4, 5, 5\] does not fit X"),
])
def test_conv_transpose_1d_shapes_that_do_not_fit_fail_naming_the_node(inputs, attrs, why):
    model = one_node("ConvTranspose", inputs, attrs, symbolic=True, name="up")
    session = cann_ep.session(model)
    assert [e.where for e in session.placement.nodes] == ["placed"], session.placement.summary()
    with pytest.raises(Exception, match=r"ConvTranspose node 'up' on CANN: .*" + why):
        session.run(None, feeds_of(inputs))
