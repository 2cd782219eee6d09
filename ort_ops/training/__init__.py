"""Training ONNX graphs with ONNX Runtime and the op library: export from PyTorch, train with
the parameters and optimizer state inside ORT (CPU or the CANN EP), checkpoints.

    from ort_ops.training import export_training_graph, Trainer, SGD, Adam

    graph = export_training_graph(model, (x,), loss_fn, targets=(y,), params_as_inputs=True)
    trainer = Trainer(graph, params, SGD(lr=0.05, momentum=0.9))
    losses = trainer.fit(batches)
    trainer.save_checkpoint("ckpt.npz")
    deployed = export_inference_graph(model, (x,), state=trainer.state_dict())   # eval-mode forward

``export_training_graph`` and ``compare_with_eager`` need PyTorch (``pip install
ort-ops[training]``); the trainer does not (it needs onnxruntime).
"""

import importlib

from ort_ops.training.interface import GRAD_PREFIX, LOSS_NAME, NEW_PREFIX, grad_name, new_name

# Loaded on first use: export and verify need torch; the trainer needs onnxruntime.
_LAZY = {
    "export_training_graph": "ort_ops.training.export",
    "export_inference_graph": "ort_ops.training.deploy",
    "ExportReport": "ort_ops.training.export_report",
    "save_atomic": "ort_ops.training.export",
    "compare_with_eager": "ort_ops.training.verify",
    "compare_all": "ort_ops.training.verify",
    "Trainer": "ort_ops.training.trainer",
    "Checkpoint": "ort_ops.training.trainer",
    "CheckpointError": "ort_ops.training.trainer",
    "read_checkpoint": "ort_ops.training.trainer",
    "initial_buffers": "ort_ops.training.trainer",
    "NonFiniteLossError": "ort_ops.training.trainer",
    "load_checkpoint_arrays": "ort_ops.training.trainer",
    "check_training_graph": "ort_ops.training.trainer",
    "cpu_session_factory": "ort_ops.training.trainer",
    "SGD": "ort_ops.training.optim",
    "Adam": "ort_ops.training.optim",
    "Optimizer": "ort_ops.training.optim",
    "build_step_graph": "ort_ops.training.step_graph",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ort_ops.training' has no attribute {name!r}")


__all__ = ["GRAD_PREFIX", "LOSS_NAME", "NEW_PREFIX", "Adam", "Checkpoint", "CheckpointError", "ExportReport",
           "NonFiniteLossError", "Optimizer", "SGD", "Trainer", "build_step_graph", "check_training_graph",
           "compare_all", "compare_with_eager", "cpu_session_factory", "export_inference_graph",
           "export_training_graph", "grad_name", "initial_buffers", "load_checkpoint_arrays", "new_name",
           "read_checkpoint", "save_atomic"]
assert set(__all__) == {"GRAD_PREFIX", "LOSS_NAME", "NEW_PREFIX", "grad_name", "new_name", *_LAZY}
