"""The ai.ortops schemas leave onnx's registry before the interpreter finalizes (onnx 1.19 hung,
1.20-1.22 segfaulted at exit destroying Python inference functions after finalization; the
onnx versions themselves are covered by scripts/compat_matrix.sh's onnx-* entries)."""

import subprocess
import sys
import textwrap


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_deregister_all_removes_and_register_all_restores():
    proc = run("""
        import onnx, ort_ops
        from ort_ops import schemas
        from ort_ops.ops import OPS
        keys = [(op.name, op.since_version, op.domain) for op in OPS]
        assert all(onnx.defs.has(*k) for k in keys), "not registered at import"
        schemas.deregister_all()
        left = [k for k in keys if onnx.defs.has(*k)]
        assert not left, f"still registered after deregister_all: {left}"
        schemas.register_all()
        schemas.register_all()
        assert all(onnx.defs.has(*k) for k in keys), "not registered again"
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_exit_handler_deregisters_before_finalization():
    """An exit handler registered before ``import ort_ops`` runs after ort_ops's (LIFO): it sees the
    schemas gone, so nothing of ours is left for onnx's static destructors."""
    proc = run("""
        import atexit, onnx
        atexit.register(lambda: print("registered at exit:", onnx.defs.has("EluGrad", 1, "ai.ortops")))
        import ort_ops
        from ort_ops.model_builder import make_elu_grad_model
        model = make_elu_grad_model("float32", (2, 3), 0.5)
        model.graph.output[0].type.tensor_type.ClearField("shape")
        onnx.shape_inference.infer_shapes(model, strict_mode=True)
        print("registered:", onnx.defs.has("EluGrad", 1, "ai.ortops"))
    """)
    assert proc.returncode == 0, f"exit status {proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.stdout.split("\n")[:2] == ["registered: True", "registered at exit: False"], proc.stdout
