"""Which ACL runtime the CANN EP will use: a real CANN toolkit, or the simulator."""

from __future__ import annotations

import os

PROVIDER = "CANNExecutionProvider"
_simulated = False


def real_cann_present() -> bool:
    """A real CANN toolkit is installed: ``ASCEND_HOME_PATH`` names a folder with libascendcl."""
    home = os.environ.get("ASCEND_HOME_PATH")
    return bool(home) and any(
        os.path.isfile(os.path.join(home, sub, "libascendcl.so")) for sub in ("lib64", "lib")
    )


def use_simulator(force: bool = False) -> bool:
    """Load the ACL simulator's libraries (before any CANN session is created), and run
    onnxruntime's OrtValue factories in the simulator's leak baseline
    (:func:`ort_ops.cann_ep.sim.wrap_ortvalue_factories`).

    A no-op returning False when a real CANN toolkit is present, unless ``force``; True when
    the simulator is (now) loaded. Idempotent.
    """
    global _simulated
    if real_cann_present() and not force:
        return False
    from ort_ops.cann_ep import sim

    sim.load()
    sim.wrap_ortvalue_factories()  # the binding's lifetime OrtValue arena is no leak at exit
    _simulated = True
    return True


def device_count() -> int:
    """Number of NPUs the ACL runtime (real or simulated) reports (``aclrtGetDeviceCount``)."""
    import ctypes

    if not real_cann_present() and not _simulated:
        use_simulator()
    lib = ctypes.CDLL("libascendcl.so", mode=ctypes.RTLD_GLOBAL)
    count = ctypes.c_uint32(0)
    rc = lib.aclrtGetDeviceCount(ctypes.byref(count))
    if rc != 0:
        raise RuntimeError(f"aclrtGetDeviceCount failed with ACL error {rc}")
    return int(count.value)


_soc_name: str | None = None


def soc_name() -> str:
    """The Ascend SoC name the ACL runtime (real or simulated) reports (``aclrtGetSocName``), read
    once per process. ACL is initialised by the CANN EP; before the first CANN session of the
    process, a minimal one (an Identity) is created so that the name is the device's."""
    global _soc_name
    if _soc_name is None:
        import ctypes

        if not real_cann_present() and not _simulated:
            use_simulator()
        _initialise_acl()
        lib = ctypes.CDLL("libascendcl.so", mode=ctypes.RTLD_GLOBAL)
        lib.aclrtGetSocName.restype = ctypes.c_char_p
        name = lib.aclrtGetSocName()
        _soc_name = name.decode() if name else ""
    return _soc_name


def _initialise_acl() -> None:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from ort_ops.domain import IR_VERSION

    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "acl_init",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    options = {"device_id": "0", "enable_cann_graph": "0", "dump_om_model": "0"}
    sess = ort.InferenceSession(model.SerializeToString(), providers=[(PROVIDER, options)])
    sess.run(None, {"x": np.zeros(1, np.float32)})


def simulated() -> bool:
    """The simulator was loaded by this process."""
    return _simulated


def available() -> bool:
    """The CANN EP is in this onnxruntime build and an ACL runtime (real or simulated) exists."""
    import onnxruntime as ort

    if PROVIDER not in ort.get_available_providers():
        return False
    if real_cann_present() or _simulated:
        return True
    from ort_ops.cann_ep import sim

    try:
        sim.library_dir()
    except FileNotFoundError:
        return False
    return True
