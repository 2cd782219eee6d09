"""Running sessions on ONNX Runtime's CANN execution provider, and a CPU simulator of the Ascend
ACL runtime (``cann_ep.sim``) so the CANN path runs on machines without an NPU."""
