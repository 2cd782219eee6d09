"""The op library's identity: every other file (Python and, through CMake, C++) reads these.

CMake parses the assignments below with a regular expression, so keep each on one line
in the form ``NAME = value``.
"""

DOMAIN = "ai.ortops"
# Standard ONNX ops placed on the CANN EP (rewrite.placement): same op types, inputs and
# attributes as ONNX's, kernels only for the CANN EP. A second domain of the same library.
CANN_DOMAIN = "ai.ortops.cann"
OPSET_VERSION = 1
LIBRARY_NAME = "ortops"
# The NaN every kernel returns for an invalid operation (inf - inf, 0 * inf) when no input NaN
# propagates: the x86 default NaN (negative, quiet, no payload), as NumPy on x86 computes it.
DEFAULT_NAN_BITS = 0xFFC00000

# Models the project writes: IR 10 is read by onnxruntime 1.24 (CANN wheel, <= 11) and 1.31
# (<= 13); onnx 1.23 would otherwise write IR 14. Standard ops use this ai.onnx opset.
IR_VERSION = 10
ONNX_OPSET = 18
