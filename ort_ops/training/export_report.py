"""What :func:`ort_ops.training.export_training_graph` did, for the user: ``report=True``.

An :class:`ExportReport` lists the aten ops of the joint forward/backward graph by who translated
them to ONNX -- this toolkit's translation table
(:data:`ort_ops.training.translations.CUSTOM_TRANSLATION_TABLE`, e.g. ``aten.convolution_backward``) or
PyTorch's exporter -- with their counts; the buffers carried as state (graph input ``<name>``,
output ``new.<name>``: BatchNorm's running statistics in train mode) and those kept as constants
(initializers); and the ONNX op types of the result. ``str(report)`` is a readable summary,
:meth:`ExportReport.to_dict` JSON-ready.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

TOOLKIT = "ort_ops"  # ExportedOp.translated_by: this toolkit's translation table
EXPORTER = "torch.onnx"  # ... PyTorch's exporter


@dataclass(frozen=True)
class ExportedOp:
    """One aten op of the joint graph: how often it occurs and who translated it. (The joint graph
    of torch 2.13 keeps no module paths: ``nn_module_stack`` is empty there.)"""

    aten_op: str  # e.g. "aten.convolution_backward.default"
    count: int
    translated_by: str  # TOOLKIT or EXPORTER


@dataclass(frozen=True)
class BufferInfo:
    """A module buffer in the training graph."""

    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class ExportReport:
    """See the module docstring."""

    toolkit_ops: list[ExportedOp] = field(default_factory=list)
    exporter_ops: list[ExportedOp] = field(default_factory=list)
    state_buffers: list[BufferInfo] = field(default_factory=list)
    constant_buffers: list[BufferInfo] = field(default_factory=list)
    onnx_ops: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        def ops(items: list[ExportedOp]) -> list[str]:
            if not items:
                return ["  (none)"]
            return [f"  {o.aten_op} x{o.count}" for o in items]

        def buffers(items: list[BufferInfo]) -> list[str]:
            return [f"  {b.name}: {b.dtype}{list(b.shape)}" for b in items] or ["  (none)"]

        lines = [f"translated by {TOOLKIT} (its translation table):", *ops(self.toolkit_ops),
                 f"translated by PyTorch's exporter ({EXPORTER}):", *ops(self.exporter_ops),
                 "buffers carried as state (input <name>, output new.<name>; the optimizer leaves them):",
                 *buffers(self.state_buffers),
                 "buffers kept as constants (initializers):", *buffers(self.constant_buffers),
                 "ONNX ops: " + (", ".join(f"{k} x{v}" for k, v in sorted(self.onnx_ops.items())) or "(none)")]
        return "\n".join(lines)

    __str__ = summary


def _buffer(name: str, tensor) -> BufferInfo:
    return BufferInfo(name, tuple(int(d) for d in tensor.shape), str(tensor.dtype).removeprefix("torch."))


def build(graph, table: Mapping, model, state_buffers: Mapping, constant_buffers: Mapping) -> ExportReport:
    """The report of ``graph`` (the fx graph handed to the exporter's translation), exported with
    custom translation ``table`` into ONNX ``model``; ``state_buffers`` and ``constant_buffers``:
    name -> initial tensor of the buffers carried as state and of the others."""
    counts: Counter = Counter()
    ours: set[str] = set()
    for node in graph.nodes:
        if node.op != "call_function" or not hasattr(node.target, "_schema"):
            continue  # placeholders, outputs, getitem: no translation
        name = str(node.target)
        counts[name] += 1
        if node.target in table:
            ours.add(name)
    report = ExportReport()
    for name in sorted(counts):
        entry = ExportedOp(name, counts[name], TOOLKIT if name in ours else EXPORTER)
        (report.toolkit_ops if name in ours else report.exporter_ops).append(entry)
    report.state_buffers = [_buffer(n, b) for n, b in state_buffers.items()]
    report.constant_buffers = [_buffer(n, b) for n, b in constant_buffers.items()]
    report.onnx_ops = dict(Counter(f"{n.domain}::{n.op_type}" if n.domain else n.op_type
                                   for n in model.graph.node))
    return report
