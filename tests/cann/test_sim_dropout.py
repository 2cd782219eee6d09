"""The simulator's CANN DropOutGenMask (GE random_ops.h) and DropOutDoMask (hicann/ops-math
random/drop_out_do_mask): the bit mask's size (align(n, 128) / 8 uint8) and layout (element i is bit
i % 8 of byte i // 8, least significant first: np.unpackbits(..., bitorder="little"), as the op's
golden.py reads it), the keep fraction, seeds, and DoMask's arithmetic against NumPy written here,
with the refusals of what CANN refuses. The random stream is the simulator's own: only its
statistics and its dependence on (seed, seed2) are checked."""

import numpy as np
import pytest

import acl_ctypes as acl
from acl_ctypes import BF16, assert_bits_equal, const, run_ops

pytestmark = pytest.mark.usefixtures("sim_dir")


def mask_bytes(n):
    return (n + 127) // 128 * 16


def gen(n, keep, seed=0, seed2=0, prob_dtype=np.float32, out=None):
    attrs = {"seed": seed, "seed2": seed2}
    return ("DropOutGenMask", [const(np.array([n], np.int64)), const(np.array(keep, prob_dtype))],
            [out or (acl.ACL_UINT8, [mask_bytes(n)])], attrs)


def do_mask(x, bits, keep, out=None):
    return ("DropOutDoMask", [x, bits, const(np.array([keep], x.dtype))],
            [out or (acl.acl_dtype(x.dtype), list(x.shape))], None)


def unpack(bits, n):
    return np.unpackbits(bits, bitorder="little")[:n].astype(bool)


def test_gen_mask_keeps_prob_of_the_bits_and_seeds_decide_the_stream(tmp_path):
    n = 20000
    results = run_ops(tmp_path, [gen(n, 0.3, 5, 1), gen(n, 0.3, 5, 1), gen(n, 0.3, 5, 2), gen(n, 0.3, 6, 1),
                                 gen(n, 0.3), gen(n, 0.3), gen(n, np.float16(0.9), 1, 1, np.float16),
                                 gen(n, 0.0, 1, 1), gen(n, 1.0, 1, 1), gen(100, 0.5, 1, 1)])
    for rc, msg, _ in results:
        assert rc == 0 and msg is None, msg
    masks = [r[2][0] for r in results]
    assert all(m.dtype == np.uint8 for m in masks) and masks[0].shape == (mask_bytes(n),) == (2512,)
    for m, keep in ((masks[0], 0.3), (masks[4], 0.3), (masks[6], float(np.float16(0.9)))):
        kept = unpack(m, m.size * 8).sum()  # every bit, the padding too, is drawn with prob
        bits = m.size * 8
        assert abs(kept - keep * bits) <= 6 * np.sqrt(bits * keep * (1 - keep)), (kept, keep * bits)
    np.testing.assert_array_equal(masks[0], masks[1])  # the same non-zero seeds: the same mask
    assert not np.array_equal(masks[0], masks[2]) and not np.array_equal(masks[0], masks[3])  # seed2, seed
    assert not np.array_equal(masks[4], masks[5])  # both seeds 0: a random seed per call
    assert not masks[7].any() and (masks[8] == 0xFF).all()  # prob 0: no bit; 1: every bit
    assert masks[9].shape == (16,)  # 100 elements: 128 bits


def test_gen_mask_refusals(tmp_path):
    bad = [(gen(100, 0.5, out=(acl.ACL_UINT8, [13])), acl.ACL_ERROR_OP_OUTPUT_NOT_MATCH, "multiple of 16"),
           (gen(300, 0.5, out=(acl.ACL_UINT8, [16])), acl.ACL_ERROR_OP_OUTPUT_NOT_MATCH, "align(300, 128) / 8 = 48"),
           (gen(100, 0.5, out=(acl.acl_dtype(np.int32), [16])), acl.ACL_ERROR_OP_OUTPUT_NOT_MATCH, "output 0 (y)"),
           (gen(100, 0.5, prob_dtype=np.float64), acl.ACL_ERROR_UNSUPPORTED_DATA_TYPE, "input 1 (prob)"),
           (("DropOutGenMask", [const(np.array([100], np.float32)), const(np.array(0.5, np.float32))],
             [(acl.ACL_UINT8, [16])], None), acl.ACL_ERROR_UNSUPPORTED_DATA_TYPE, "input 0 (shape)")]
    for (rc, msg, _), (_, code, text) in zip(run_ops(tmp_path, [b[0] for b in bad]), bad):
        assert rc == code and text in msg, (rc, msg)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["float32", "float16", "bfloat16"])
def test_do_mask_reads_bit_i_of_byte_i_over_8_lsb_first(tmp_path, dtype):
    n = 300
    rng = np.random.default_rng(3)
    x = rng.uniform(-4, 4, n).astype(dtype)
    bits = rng.integers(0, 256, mask_bytes(n)).astype(np.uint8)
    keep = 0.7
    ((rc, msg, (y,)),) = run_ops(tmp_path, [do_mask(x, bits, keep)])
    assert rc == 0 and msg is None, msg
    kept = unpack(bits, n)
    if dtype == np.float16:  # in float16: half(1 / keep_prob), then half(x * scale)
        scale = np.float16(1.0) / np.float16(keep)
        want = np.where(kept, x * scale, np.float16(0))
    else:  # float32 math (bfloat16 cast to float32 and rounded once)
        scale = np.float32(1.0) / np.float32(np.array(keep, dtype).astype(np.float32))
        want = np.where(kept, x.astype(np.float32) * scale, np.float32(0)).astype(dtype)
    assert_bits_equal(y, want)
    first = np.zeros(mask_bytes(n), np.uint8)
    first[0] = 0b00000101  # elements 0 and 2 only
    ((rc, msg, (y1,)),) = run_ops(tmp_path, [do_mask(np.ones(16, np.float32), first[:16], 1.0)])
    assert rc == 0, msg
    np.testing.assert_array_equal(np.flatnonzero(y1), [0, 2])


def test_gen_then_do_mask_drops_the_generated_bits(tmp_path):
    n = 1000
    x = np.random.default_rng(4).uniform(1, 2, (10, 100)).astype(np.float32)
    ((rc, msg, (bits,)),) = run_ops(tmp_path, [gen(n, 0.6, 9, 9)])
    assert rc == 0, msg
    ((rc, msg, (y,)),) = run_ops(tmp_path, [do_mask(x, bits, 0.6)])
    assert rc == 0, msg
    kept = unpack(bits, n).reshape(x.shape)
    np.testing.assert_array_equal(y, np.where(kept, x * (np.float32(1) / np.float32(0.6)), np.float32(0)))


def test_do_mask_on_ascend950_computes_float16_in_float32(tmp_path):
    n = 256
    x = np.random.default_rng(5).uniform(-4, 4, n).astype(np.float16)
    bits = np.random.default_rng(6).integers(0, 256, mask_bytes(n)).astype(np.uint8)
    results = run_ops(tmp_path, [do_mask(x, bits, 0.3), do_mask(x, bits, 1.0), do_mask(x, bits, 0.0)],
                      ACLSIM_SOC_NAME="Ascend950PR")
    assert all(rc == 0 for rc, _, _ in results), results
    kept = unpack(bits, n)
    keep = np.float16(0.3).astype(np.float32)
    want = np.where(kept, x.astype(np.float32) * (np.float32(1) / keep), np.float32(0)).astype(np.float16)
    assert_bits_equal(results[0][2][0], want)
    assert_bits_equal(results[1][2][0], x)  # keep_prob 1: x whatever the mask
    assert not results[2][2][0].any()  # keep_prob 0: zeros


def test_do_mask_refusals(tmp_path):
    x = np.ones(200, np.float32)
    bits = np.zeros(32, np.uint8)
    bad = [(do_mask(x, bits[:16], 0.5), acl.ACL_ERROR_OP_INPUT_NOT_MATCH, "input 1 (mask)"),
           (do_mask(x, bits.astype(np.int8), 0.5), acl.ACL_ERROR_OP_INPUT_NOT_MATCH, "input 1 (mask)"),
           (do_mask(x, bits, 1.5), acl.ACL_ERROR_OP_INPUT_NOT_MATCH, "0 <= keep_prob <= 1"),
           (("DropOutDoMask", [x, bits, const(np.array([0.5], np.float16))], [(acl.acl_dtype(np.float32), [200])], None),
            acl.ACL_ERROR_OP_INPUT_NOT_MATCH, "input 2 (keep_prob)"),
           (do_mask(x.astype(np.float64), bits, 0.5), acl.ACL_ERROR_UNSUPPORTED_DATA_TYPE, "input 0 (x)"),
           (do_mask(x, bits, 0.5, out=(acl.acl_dtype(np.float32), [100, 2])), acl.ACL_ERROR_OP_OUTPUT_NOT_MATCH, "output 0 (y)")]
    results = run_ops(tmp_path, [b[0] for b in bad])
    for (rc, msg, _), (_, code, text) in zip(results, bad):
        assert rc == code and text in msg, (rc, code, msg)


def test_do_mask_bfloat16_only_on_atlas_a2_a3_and_950(tmp_path):
    x = np.ones(128, BF16)
    bits = np.full(16, 0xFF, np.uint8)
    ((rc, msg, _),) = run_ops(tmp_path, [do_mask(x, bits, 0.5)], ACLSIM_SOC_NAME="Ascend910A")
    assert rc == acl.ACL_ERROR_UNSUPPORTED_DATA_TYPE and "bfloat16" in msg and "ascend910" in msg, msg
    ((rc, msg, (y,)),) = run_ops(tmp_path, [do_mask(x, bits, 0.5)], ACLSIM_SOC_NAME="Ascend910_9391")
    assert rc == 0 and y.dtype == BF16 and (y.astype(np.float32) == 2).all(), msg
