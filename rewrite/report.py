"""What a pass did: one entry per candidate site (fused, lowered or rejected, and why)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field

from ort_ops.rewrite.graph_scopes import all_node_lists


@dataclass
class SiteReport:
    """One site: the rule that matched, its nodes, and the outcome."""

    rule: str
    status: str  # "fused" | "rejected" | "lowered" | "would fuse"
    nodes: list[str]
    output: str
    grads: str | None = None
    activations: str | None = None
    dtype: str | None = None
    alpha: float | None = None
    exact: bool | None = None  # bit-identical to the original for every input
    notes: list[str] = field(default_factory=list)
    reason: str | None = None  # why it was not fused
    layer: str | None = None  # the exporter's name of the ELU's layer (PyTorch: its name scopes)
    scope: str = "main graph"  # which graph: main, a subgraph ("If n/then_branch"), a function
    op: str = "EluGrad"  # the ai.ortops op the site becomes
    attributes: dict = field(default_factory=dict)  # that op's attributes (other than EluGrad's alpha)

    def line(self) -> str:
        where = f" (layer {self.layer})" if self.layer else ""
        where += f" in {self.scope}" if self.scope != "main graph" else ""
        what = f"{self.status:10s} {self.rule:18s} -> {self.output}{where}"
        if self.reason:
            return f"{what}: {self.reason}"
        what_op = f"alpha={self.alpha!r}" if self.op == "EluGrad" else \
            self.op + "".join(f", {k}={v!r}" for k, v in self.attributes.items())
        detail = f" [{self.dtype}, {what_op}, {'exact' if self.exact else 'not bit-exact'}]"
        return what + detail + "".join(f"\n{'':13s}note: {n}" for n in self.notes)


@dataclass
class RewriteReport:
    """The sites a pass looked at. ``fused`` / ``rejected`` filter them; ``to_json`` dumps."""

    pass_name: str = ""
    strict: bool = False
    sites: list[SiteReport] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # about the whole pass (e.g. unreadable data)
    validation: str | None = None  # the validation table, when the CLI validated the result
    # fuse / inspect: the ai.ortops nodes the input already had, by op type (kept as they are)
    already_fused: dict[str, int] = field(default_factory=dict)
    # seconds per phase of the last pass (fuse: scan, import, match, edit, cleanup, export);
    # diagnostics only: not part of to_dict() / to_json(), not compared
    timings: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    @property
    def fused(self) -> list[SiteReport]:
        return [s for s in self.sites if s.status in ("fused", "lowered", "would fuse")]

    @property
    def rejected(self) -> list[SiteReport]:
        return [s for s in self.sites if s.status == "rejected"]

    def to_dict(self) -> dict:
        return {"pass": self.pass_name, "strict": self.strict,
                "sites": [asdict(s) for s in self.sites], "notes": list(self.notes),
                "validation": self.validation, "already_fused": dict(self.already_fused)}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def summary(self) -> str:
        """The count of sites rewritten and rejected, each by the op its sites become (an ELU
        backward site ``EluGrad``, a loss site ``SoftmaxCrossEntropyLossAndGrad``, ...), then a line
        per site; then the ai.ortops nodes the input already had (``already fused: 2 EluGrad``)."""
        done = "would be rewritten" if self.pass_name == "inspect" else "rewritten"
        head = (f"{self.pass_name}: {len(self.fused)} site(s) {done}{_by_op(self.fused)}, "
                f"{len(self.rejected)} rejected{_by_op(self.rejected)}" + (" (strict)" if self.strict else ""))
        lines = [head] + ["  " + s.line() for s in self.sites]
        if self.already_fused:
            lines.append("  already fused: " + ", ".join(f"{n} {op}" for op, n in self.already_fused.items()))
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def ops_of_domain(model, domain: str) -> dict[str, int]:
    """How many nodes of ``domain`` ``model`` has, by op type in the order they first occur: every
    graph, nested subgraph and model-local function (a function's nodes once, however often it is
    called). A model that imports no opset of ``domain`` has none (a valid model imports the
    domains its nodes use): it is not walked, so a pass over a graph not yet fused costs nothing more."""
    imports = [model.opset_import] + [f.opset_import for f in model.functions]
    if not any(o.domain == domain for ops in imports for o in ops):
        return {}
    return dict(Counter(n.op_type for _, nodes in all_node_lists(model) for n in nodes if n.domain == domain))


def _by_op(sites: list[SiteReport]) -> str:
    """`` (2 EluGrad, 1 SoftmaxCrossEntropyLossAndGrad)``: how many of ``sites`` become each op, in
    the order the ops first occur ("" for no site)."""
    counts = Counter(s.op for s in sites)
    return f" ({', '.join(f'{n} {op}' for op, n in counts.items())})" if counts else ""
