"""The C++ declarations the build generates from the OpDefs (scripts/gen_op_declarations.py):
the compiled library says what every OpDef says (names, types, optional and host flags, attribute
kinds and defaults, providers, the foreign attribute names its kernels reject), and a malformed
declaration stops the generator with an error naming the file, the op and the field."""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import io
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, InvalidGraph, RuntimeException

from op_helpers import make_session
from ort_ops import dtypes
from ort_ops.library import get_library_path
from ort_ops.model_builder import make_op_model
from ort_ops.ops import OPS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATOR = os.path.join(ROOT, "scripts", "gen_op_declarations.py")
PROVIDERS = {"CPUExecutionProvider": "CPU", "CANNExecutionProvider": "CANN"}


def compiled_declarations() -> dict[str, list[str]]:
    """op -> [inputs, outputs, attributes, providers] as OrtOpsDeclarations() prints them."""
    lib = ctypes.CDLL(get_library_path())
    if not hasattr(lib, "OrtOpsDeclarations"):
        pytest.skip("the library predates OrtOpsDeclarations (rebuild it: scripts/setup.sh or ORTOPS_LIBRARY)")
    lib.OrtOpsDeclarations.restype = ctypes.c_char_p
    rows = [line.split(" ") for line in lib.OrtOpsDeclarations().decode().splitlines()]
    return {row[0]: row[1:] for row in rows}


def io_text(op, tensors) -> str:
    def one(t):
        kind = "T" if t.type == "T" else str(dtypes.onnx_type_of(t.type))
        return f"{t.name}{'?' if t.optional else ''}{'@host' if t.host else ''}:{kind}"

    return ",".join(one(t) for t in tensors) or "-"


def parse_value(kind: str, text: str):
    """A value OrtOpsDeclarations() printed (floats: the shortest text of a float32)."""
    f32 = lambda v: float(np.float32(v))
    if kind in ("ints", "floats"):
        items = [] if text == "" else text.split(";")
        return [int(v) for v in items] if kind == "ints" else [f32(v) for v in items]
    return {"float": f32, "int": int, "string": str}[kind](text)


def declared_value(kind: str, value):
    """The value the C++ side holds: float32 for floats (what ORT's attributes are)."""
    if kind == "float":
        return float(np.float32(value))
    if kind == "floats":
        return [float(np.float32(v)) for v in value]
    return list(value) if kind == "ints" else value


def test_the_library_declares_exactly_the_opdefs():
    assert sorted(compiled_declarations()) == sorted(op.name for op in OPS)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_generated_declaration_follows_the_opdef(op):
    inputs, outputs, attributes, providers = compiled_declarations()[op.name]
    assert inputs == io_text(op, op.inputs), f"{op.name}: generated inputs differ from ort_ops/ops"
    assert outputs == io_text(op, op.outputs), f"{op.name}: generated outputs differ from ort_ops/ops"
    assert providers == ",".join(PROVIDERS[p] for p in PROVIDERS if p in op.providers)
    got = {}
    for item in ([] if attributes == "-" else attributes.split(",")):
        head, value = item.split("=", 1)
        name, kind = head.split(":")
        got[name] = (kind, parse_value(kind, value))
    want = {a.name: (a.kind, declared_value(a.kind, a.default)) for a in op.attributes}
    assert got == want, f"{op.name}: generated attributes (kind, default) differ from ort_ops/ops"
    assert list(got) == [a.name for a in op.attributes], "attributes are read in declaration order"


@pytest.mark.parametrize("op", [o for o in OPS if o.foreign_attributes], ids=lambda o: o.name)
def test_the_kernels_reject_each_declared_foreign_attribute(op):
    """The foreign names reach the kernels' undeclared-attribute probe (CPU EP)."""
    for name in op.foreign_attributes:
        model = make_op_model(op, op.dtypes[0], None if not op.elementwise else (4, 2), name="the_node")
        model.graph.node[0].attribute.append(onnx.helper.make_attribute(name, 1))
        with pytest.raises((Fail, InvalidArgument, InvalidGraph, RuntimeException),
                           match=f"{op.name}: node 'the_node' has attribute {name}, which {op.name} does not define"):
            make_session(model)


def source_copy(tmp_path):
    """What the generator reads: ort_ops/{ops/*.py, dtypes.py} and ort_ops/csrc/ops/<op>/ (names only)."""
    root = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "ort_ops", "ops"), root / "ort_ops" / "ops",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(ROOT, "ort_ops", "dtypes.py"), root / "ort_ops" / "dtypes.py")
    csrc = os.path.join(ROOT, "ort_ops", "csrc", "ops")
    for folder in os.listdir(csrc):
        (root / "ort_ops" / "csrc" / "ops" / folder).mkdir(parents=True)
        for name in os.listdir(os.path.join(csrc, folder)):
            (root / "ort_ops" / "csrc" / "ops" / folder / name).write_text("")
    return root


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_op_declarations", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Result:
    def __init__(self, returncode, stderr):
        self.returncode, self.stderr = returncode, stderr


def generate(root, out):
    """The generator run in this process (its exit code and stderr)."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = load_generator().main(["--root", str(root), "--out", str(out)])
    return Result(code, stderr.getvalue())


@pytest.mark.python_only
def test_the_generator_needs_only_the_standard_library(tmp_path):
    # -I -S: no site-packages (the isolated build env has neither NumPy nor onnx)
    result = subprocess.run([sys.executable, "-I", "-S", GENERATOR, "--root", ROOT, "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    # one header per op module (ort_ops/ops/<stem>.py, the module of the op's reference function)
    stems = {o.reference.__module__.rsplit(".", 1)[1] for o in OPS}
    assert len(stems) == len(OPS) >= 6, stems
    assert sorted(os.listdir(tmp_path / "declared")) == sorted(f"{m}.h" for m in stems)


MALFORMED = [
    ("elu_grad", 'Attribute("alpha", DEFAULT_ALPHA, "ELU alpha (the negative-side offset)")',
     'Attribute("alpha", DEFAULT_ALPHA, "ELU alpha (the negative-side offset)", kind="double")',
     "ort_ops/ops/elu_grad.py:", "op EluGrad: field 'attributes[0] (alpha).kind': 'double' is not one of"),
    ("elu_grad", 'Attribute("alpha", DEFAULT_ALPHA,', 'Attribute("alpha", "one",',
     "ort_ops/ops/elu_grad.py:", "op EluGrad: field 'attributes[0] (alpha).default': 'one' is not a value of kind"),
    ("max_pool_grad", 'list(DEFAULT_KERNEL)', 'sorted(DEFAULT_KERNEL)',
     "ort_ops/ops/max_pool_grad.py:", "cannot evaluate 'sorted(DEFAULT_KERNEL)' at build time"),
    ("sgd_update", 'dtypes=("float32",)', 'dtypes=("float128",)',
     "ort_ops/ops/sgd_update.py:", "op SGDUpdate: field 'dtypes': 'float128' is not a dtype"),
    ("softmax_cross_entropy_loss_and_grad", 'type="int64"', 'type="long"',
     "ort_ops/ops/softmax_cross_entropy_loss_and_grad.py:",
     "op SoftmaxCrossEntropyLossAndGrad: field 'inputs[1] (target).type': 'long' is neither 'T' nor a dtype"),
    ("adam_update", '    reference=adam_update,\n',
     '    reference=adam_update,\n    providers=("CPUExecutionProvider",),\n',
     "ort_ops/ops/adam_update.py:",
     "op AdamUpdate: field 'providers' does not declare CANNExecutionProvider, but ort_ops/csrc/ops/adam_update/ "
     "has a cann_*.cc kernel file"),
    ("sgd_update", 'Tensor("grad", "its gradient")', 'Tensor("param", "its gradient")',
     "ort_ops/ops/sgd_update.py:", "op SGDUpdate: field 'inputs[1].name': 'param' is not a unique identifier"),
]


@pytest.mark.python_only
@pytest.mark.parametrize("module, old, new, where, what", MALFORMED,
                         ids=["kind", "default", "expression", "dtype", "fixed-type", "providers", "duplicate-name"])
def test_a_malformed_declaration_is_a_build_error_naming_the_op_and_the_field(tmp_path, module, old, new, where,
                                                                             what):
    root = source_copy(tmp_path)
    path = root / "ort_ops" / "ops" / f"{module}.py"
    text = path.read_text()
    assert text.count(old) == 1, f"the test's anchor {old!r} is not in ort_ops/ops/{module}.py once"
    path.write_text(text.replace(old, new))
    result = generate(root, tmp_path / "out")
    assert result.returncode == 1
    assert result.stderr.startswith("error: op declaration: " + where), result.stderr
    assert what in result.stderr, result.stderr
    assert not (tmp_path / "out" / "declared").exists(), "nothing is generated from a malformed declaration"


@pytest.mark.python_only
def test_a_kernel_folder_without_a_declaration_is_a_build_error(tmp_path):
    root = source_copy(tmp_path)
    (root / "ort_ops" / "csrc" / "ops" / "foo_grad").mkdir()
    result = generate(root, tmp_path / "out")
    assert result.returncode == 1
    assert "ort_ops/csrc/ops/foo_grad/ has kernels but ort_ops/ops/foo_grad.py declares no OP" in result.stderr


@pytest.mark.python_only
def test_host_and_fixed_types_reach_the_generated_io_specs(tmp_path):
    """No op has a host-memory input yet: a declared one becomes an on_cpu IoSpec; an output cannot be one."""
    root = source_copy(tmp_path)
    path = root / "ort_ops" / "ops" / "sgd_update.py"
    text = path.read_text()
    anchor = 'first step, [lr, momentum, 1 - dampening] afterwards", type="float32")'
    assert text.count(anchor) == 1
    path.write_text(text.replace(anchor, anchor[:-1] + ", host=True)"))
    result = generate(root, tmp_path / "out")
    assert result.returncode == 0, result.stderr
    header = (tmp_path / "out" / "declared" / "sgd_update.h").read_text()
    assert ("return {IoSpec{t, false, false}, IoSpec{t, false, false}, IoSpec{t, true, false}, "
            "IoSpec{ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, false, true}};") in header
    text = path.read_text().replace('Tensor("new_param", "the updated parameter")',
                                    'Tensor("new_param", "the updated parameter", host=True)')
    path.write_text(text)
    result = generate(root, tmp_path / "out2")
    assert result.returncode == 1
    assert "op SGDUpdate: field 'outputs': new_param: host memory is for inputs only" in result.stderr
