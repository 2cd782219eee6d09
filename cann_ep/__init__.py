"""Running sessions on ONNX Runtime's CANN execution provider, and a CPU simulator of the Ascend
ACL runtime (``cann_ep.sim``) so the CANN path runs on machines without an NPU.

    from ort_ops import cann_ep
    cann_ep.use_simulator()            # no-op when a real CANN toolkit is present
    sess = cann_ep.session(model)      # op library registered, CANN first, single-op mode
    ...
    runs = cann_ep.node_runs(sess)     # which provider ran each node (from ORT's profile)

Needs the ``onnxruntime-cann`` wheel (its own environment: it conflicts with ``onnxruntime``).
"""

from ort_ops._source_checkout import refuse_old_name

refuse_old_name(__name__)  # only as ort_ops.<name>: the old top-level name would be a second copy

from ort_ops.cann_ep.runtime import available, real_cann_present, use_simulator
from ort_ops.cann_ep.session import PROVIDER, default_provider_options, node_runs, session

__all__ = ["PROVIDER", "available", "default_provider_options", "node_runs",
           "real_cann_present", "session", "use_simulator"]
