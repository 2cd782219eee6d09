"""Scaled dot-product attention in a training graph: SDPA decomposed to its math before export.

torch 2.13's exporter has no translation for the backward of the fused attention kernels
that ``F.scaled_dot_product_attention`` dispatches to (``No ONNX function found for
aten._scaled_dot_product_flash_attention_for_cpu_backward``), so neither SDPA nor
``nn.MultiheadAttention(need_weights=False)`` / ``nn.TransformerEncoderLayer`` (which call it)
exported. :func:`decompose` replaces every ``aten.scaled_dot_product_attention`` node of the
exported (training-IR) program by the aten ops of its math
(:func:`scaled_dot_product_attention_math`, traced and inlined) *before* the joint
forward/backward graph is made, so autograd differentiates MatMul / Softmax / Where and the
exporter emits standard ONNX ops for forward and backward alike.

Why decompose rather than translate the ``_scaled_dot_product_*_backward`` ops: which fused
kernel the dispatcher picks (flash for CPU, efficient, cuDNN, math) and the layout of its
auxiliary outputs (logsumexp, RNG state) vary with device, dtype and torch version, each would
need its own forward and backward translation, and a float mask that requires a gradient (a
learned bias) would need one more; the decomposition is one function of the documented
semantics, its backward is PyTorch's own autograd of ops the exporter already handles, and the
graph is plain MatMul / Softmax that any ONNX runtime runs. It is not bit-identical to eager
(whose CPU kernel sums in blocks with an online softmax): the tests bound the difference by the
float32 tolerance.

The math (``L`` queries, ``S`` keys, ``E`` the query/key width):
``softmax(Q K^T * scale + M) V`` with ``scale = 1/sqrt(E)`` unless given; a boolean mask keeps
the positions where it is True (``Where(M, logits, -inf)``), a float mask is added; ``is_causal``
is the top-left lower-triangular ``[L, S]`` boolean mask; ``enable_gqa`` repeats each key/value
head ``Hq / Hkv`` times (``repeat_interleave`` on the head axis). With an ``attn_mask``, a row
whose keys are all masked gives zeros (as PyTorch's CPU kernel does), with zero gradient.
float16 / bfloat16 attention is computed in float32 and rounded once to the input dtype.

Attention dropout (``dropout_p > 0``, as ``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer``
pass in train mode) takes its mask from a graph input like every dropout
(:class:`ort_ops.training.dropout.DropoutMasks` replaces such SDPA calls by this math with the
mask applied to the softmax weights, before export). Not supported (a ``ValueError`` at export
naming the op, the module path and the way around): ``dropout_p > 0`` with
``export_training_graph(..., dropout_masks=False)`` or inside ``nn.MultiheadAttention`` (it calls
SDPA from ``F.multi_head_attention_forward``, below the function mode: set its ``dropout`` to 0),
and direct calls of the fused kernels (``aten._scaled_dot_product_*``).
"""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten

SDPA = aten.scaled_dot_product_attention.default
_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _fused_kernels() -> tuple:
    """The private attention kernels whose backward has no ONNX translation (torch 2.13 names)."""
    names = ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
             "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
             "_scaled_dot_product_fused_attention_overrideable", "_flash_attention_forward",
             "_efficient_attention_forward")
    return tuple(getattr(aten, n) for n in names if hasattr(aten, n))


FUSED_KERNELS = _fused_kernels()


def scaled_dot_product_attention_math(query, key, value, attn_mask=None, dropout_p=0.0,
                                      is_causal=False, scale=None, enable_gqa=False, *, weights_dropout=None):
    """``aten::scaled_dot_product_attention`` as MatMul / Softmax (see the module docstring).
    ``weights_dropout(probs)``: the dropout of the attention weights (given masks,
    :class:`ort_ops.training.dropout.DropoutMasks`); ``dropout_p`` itself must be 0."""
    if dropout_p != 0.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be 0.0 to export, got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: attn_mask must be None with is_causal=True")
    out_dtype = query.dtype
    if out_dtype in _LOW_PRECISION:
        query, key, value = query.float(), key.float(), value.float()
    if enable_gqa and key.size(-3) != query.size(-3):
        key = key.repeat_interleave(query.size(-3) // key.size(-3), -3)
        value = value.repeat_interleave(query.size(-3) // value.size(-3), -3)
    factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    logits = torch.matmul(query, key.transpose(-2, -1)) * factor
    length, source = query.size(-2), key.size(-2)
    if is_causal:
        attn_mask = torch.ones(length, source, dtype=torch.bool, device=query.device).tril()
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            logits = logits.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            logits = logits + attn_mask.to(logits.dtype)
    if attn_mask is not None and not is_causal:
        # A row with every key masked: softmax of all -inf is NaN (and so would be every
        # gradient through it); PyTorch gives zeros. Softmax a finite row, then zero it.
        empty = torch.isneginf(logits).all(-1, keepdim=True)
        probs = torch.softmax(logits.masked_fill(empty, 0.0), -1).masked_fill(empty, 0.0)
    else:
        probs = torch.softmax(logits, -1)
    if weights_dropout is not None:
        probs = weights_dropout(probs)
    out = torch.matmul(probs, value)
    return out if out.dtype == out_dtype else out.to(out_dtype)


def module_path(node: torch.fx.Node, root: str = "") -> str:
    """The module that made ``node``: its dotted path below ``root`` (``<model>`` for ``root``
    itself) and its class name."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "<model>"
    path, cls = list(stack.values())[-1]
    if root and (path == root or path.startswith(root + ".")):
        path = path[len(root) + 1:]
    name = getattr(cls, "__name__", None) or str(cls).rsplit(".", 1)[-1].rstrip("'>")
    return f"{path or '<model>'} ({name})"


def _dropout_p(node: torch.fx.Node) -> float:
    if len(node.args) > 4:
        return float(node.args[4])
    return float(node.kwargs.get("dropout_p", 0.0))


def check_supported(graph: torch.fx.Graph, root: str = "") -> list[torch.fx.Node]:
    """The SDPA nodes of ``graph``; ``ValueError`` for attention this module cannot export
    (naming the module path below ``root``, see :func:`module_path`)."""
    found = []
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if getattr(node.target, "overloadpacket", None) in FUSED_KERNELS:
            raise ValueError(
                f"aten.{node.target.__name__} in module {module_path(node, root)}: the backward of this fused "
                "attention kernel has no ONNX translation; call torch.nn.functional."
                "scaled_dot_product_attention instead (ort_ops.training decomposes it to MatMul/Softmax)")
        if node.target is SDPA:
            p = _dropout_p(node)
            if p != 0.0:
                raise ValueError(
                    f"aten.scaled_dot_product_attention with dropout_p={p} in module {module_path(node, root)}: "
                    "attention dropout exports (with its mask as a graph input) only where the model calls "
                    "torch.nn.functional.scaled_dot_product_attention itself, with dropout_masks=True (the "
                    "default); nn.MultiheadAttention (and the transformer layers) call it inside "
                    "F.multi_head_attention_forward, out of reach: set its dropout to 0.0 (e.g. "
                    "layer.self_attn.dropout = 0.0; nn.Dropout layers elsewhere are fine)")
            found.append(node)
    return found


def decompose(program: torch.export.ExportedProgram, root: str = "") -> torch.export.ExportedProgram:
    """``program`` with every SDPA node replaced, in place, by the aten ops of its math.

    The program stays a training-IR program (buffer mutations such as BatchNorm's running
    statistics are untouched, which ``ExportedProgram.run_decompositions`` would functionalise
    into extra outputs the joint-graph export then takes for the loss). Each SDPA's math is traced
    on its static input shapes (:func:`torch.fx.experimental.proxy_tensor.make_fx`) and inlined,
    the new nodes carrying the SDPA node's module stack. Raises ``ValueError`` (see
    :func:`check_supported`) for attention that cannot be exported; ``root``: the attribute path of
    the user's module in ``program`` (left out of module paths).
    """
    nodes = check_supported(program.graph, root)
    for node in nodes:
        _inline_math(program.graph, node)
    if nodes:
        program.graph.lint()
        program.graph_module.recompile()
    return program


_SDPA_ARGS = tuple(a.name for a in SDPA._schema.arguments)
_KEPT_META = ("nn_module_stack", "stack_trace", "source_fn_stack", "torch_fn", "from_node")


def _inline_math(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """Replace SDPA ``node`` by the traced :func:`scaled_dot_product_attention_math` graph."""
    from torch.fx.experimental.proxy_tensor import make_fx

    bound = {**dict(zip(_SDPA_ARGS, node.args)), **node.kwargs}
    tensors = {k: v for k, v in bound.items() if isinstance(v, torch.fx.Node)}
    constants = {k: v for k, v in bound.items() if k not in tensors}
    names = list(tensors)

    def math_of(*values):
        return scaled_dot_product_attention_math(**dict(zip(names, values)), **constants)

    examples = []
    for name, arg in tensors.items():
        val = arg.meta.get("val")
        if not isinstance(val, torch.Tensor) or not all(isinstance(d, int) for d in val.shape):
            raise ValueError(f"scaled_dot_product_attention: {name} needs a static shape, got "
                             f"{getattr(val, 'shape', None)}; export with static input shapes")
        examples.append(torch.zeros(tuple(val.shape), dtype=val.dtype))
    traced = make_fx(math_of, pre_dispatch=True)(*examples)
    env = dict(zip([n for n in traced.graph.nodes if n.op == "placeholder"], tensors.values()))
    result = None
    with graph.inserting_before(node):
        for sub in traced.graph.nodes:
            if sub.op == "placeholder":
                continue
            if sub.op == "output":
                (result,) = torch.fx.node.map_arg(sub.args, lambda n: env[n])
                continue
            if sub.op != "call_function":
                raise AssertionError(f"traced attention math has a {sub.op} node ({sub.name}): "
                                     "expected aten calls only")
            new = graph.node_copy(sub, lambda n: env[n])
            new.meta = {key: node.meta[key] for key in _KEPT_META if key in node.meta}
            env[sub] = new
    node.replace_all_uses_with(result)
    graph.erase_node(node)
