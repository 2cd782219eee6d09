#!/usr/bin/env python3
"""A small, dependency-free mutation tester for the rewrite rules and the op definitions.

Each mutation names a file, an exact snippet of it, the replacement, and the tests that ought
to notice. For each one the file is changed in the working tree, ``pytest -x -q`` runs the
given tests, and the file is put back byte for byte (with its original modification time)
before the next one, also on Ctrl-C, SIGTERM or an exception. A mutation is *killed* when the
tests fail (or cannot even be collected) and *SURVIVED* when they pass: then either the change
does not alter behaviour (an equivalent mutation) or no test asserts what the code does. A
mutation proven equivalent carries the proof (``equivalent=``): its survival is reported as
*equivalent*, not as a failure, and if tests ever kill it the proof is wrong and that is an error.

    scripts/mutation_check.py                       # every built-in mutation, on this repo
    scripts/mutation_check.py --repo /tmp/copy      # on another checkout
    scripts/mutation_check.py --list                # the mutations and their tests
    scripts/mutation_check.py --only 'lower-*' base-read-side --tests tests/rewrite   # a subset, other tests
    scripts/mutation_check.py --json results.json   # also write the results

Safety: the repo must be a git checkout in which every file to be mutated is tracked and has
no uncommitted change (so nothing but a mutation can ever be lost, and ``git checkout -- FILE``
recovers even from a ``kill -9``). Python writes no bytecode for the runs
(``PYTHONDONTWRITEBYTECODE``), so a restored file is never shadowed by a mutated ``.pyc``.
Tests run with the repo's ``.venv/bin/python`` when there is one (``--python`` otherwise);
the environment is passed through (``ORTOPS_LIBRARY`` and so on).

Exit status: 0 every mutation killed or equivalent, 1 some survived, 2 errors (a snippet not found, a dirty
file, a failing baseline, pytest usage errors).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace

# --- test sets (paths that do not exist in the checkout are left out, with a note) ------------------
RULES = ["tests/rewrite/test_rules_other_forms.py", "tests/rewrite/test_rule_where_input_exp.py",
         "tests/rewrite/test_graph_safety.py", "tests/rewrite/test_fuse.py",
         "tests/rewrite/test_fuse_performance_paths.py", "tests/rewrite/test_cli_and_fixtures.py::test_pytorch_fixture",
         "tests/rewrite/test_rule_gaps.py", "tests/rewrite/test_rule_mutants.py"]
LOWER = ["tests/rewrite/test_lower.py", "tests/rewrite/test_graph_safety.py",
         "tests/ops/test_contract.py::test_lowering_is_exact", "tests/rewrite/test_rule_gaps.py"]
REAL = ["tests/rewrite/test_real_graphs.py"]
REFERENCE = ["tests/ops/elu_grad/test_schema_and_reference.py",
             "tests/ops/elu_grad/test_cpu_kernel.py::test_nan_payload_rule",
             "tests/ops/elu_grad/test_cpu_kernel.py::test_edge_values",
             "tests/ops/elu_grad/test_cpu_kernel.py::test_matches_article_golden",
             "tests/ops/test_contract.py"]
SCHEMA = ["tests/ops/elu_grad/test_schema_and_reference.py", "tests/ops/test_contract.py",
          "tests/ops/elu_grad/test_errors.py", "tests/ops/elu_grad/test_schema_gaps.py"]
RANGES = ["tests/training/test_trainer_reliability.py", "tests/training/test_input_ranges.py"]
ADAM = ["tests/ops/adam_update/test_adam_update.py", "tests/training/test_step_graph.py"]
FOLD = ["tests/rewrite/test_placement_transposes.py"]


@dataclass
class Mutation:
    id: str
    file: str
    old: str  # exact snippet, must occur exactly once in the file
    new: str
    tests: list = field(default_factory=list)
    what: str = ""
    # other spellings of the same mutation, (file, old, new), for other revisions of the code;
    # the first one whose file holds its snippet exactly once is used
    alts: list = field(default_factory=list)
    # why no test can tell the mutant from the original ("": it must be killed)
    equivalent: str = ""


def m(id, file, old, new, tests, what="", alts=(), equivalent=""):
    return Mutation(id, file, old, new, list(tests), what, list(alts), equivalent)


def resolve(repo: str, mut: Mutation) -> Mutation | str:
    """``mut`` with the spelling that applies to ``repo``, or why none does."""
    tried = []
    for file, old, new in [(mut.file, mut.old, mut.new), *mut.alts]:
        path = os.path.join(repo, file)
        n = open(path, encoding="utf-8").read().count(old) if os.path.isfile(path) else 0
        if n == 1:
            return Mutation(mut.id, file, old, new, list(mut.tests), mut.what, equivalent=mut.equivalent)
        tried.append(f"{file}: {'no such file' if not os.path.isfile(path) else f'snippet found {n} times'}")
    return f"{mut.id}: its snippet must occur exactly once ({'; '.join(tried)})"


LOW_EG = "rewrite/lowerings/elu_grad.py"  # where the EluGrad lowering lives in later revisions
B, SEL, GV = "rewrite/rules/base.py", "rewrite/rules/elu_select.py", "rewrite/graph_view.py"
RR, SU = "rewrite/rules/rule.py", "rewrite/surgery.py"
REF, LOW, SCH, INR = "ort_ops/ops/elu_grad.py", "rewrite/lower.py", "ort_ops/schemas.py", "ort_ops/input_ranges.py"

MUTATIONS: list[Mutation] = [
    # -- rewrite/rules/base.py: the select, the factors, the shared checks
    m("base-read-side", B, 'side = "negative" if op in ("Less", "LessOrEqual") else "positive"',
      'side = "negative" if op in ("Greater", "GreaterOrEqual") else "positive"', RULES, "flip which side is negative"),
    m("base-read-zero-ge", B, 'includes_zero = op in ("LessOrEqual", "GreaterOrEqual")',
      'includes_zero = op in ("LessOrEqual",)', RULES, ">= no longer includes 0"),
    m("base-read-not-nan", B, "includes_zero, includes_nan = not includes_zero, True",
      "includes_zero, includes_nan = not includes_zero, False", RULES, "a Not no longer adds NaN to the complement"),
    m("base-read-double-not", B, "if flips % 2:", "if flips:", RULES, "Not(Not(c)) read as Not(c)"),
    m("base-read-swapped-op", B, '{"Less": "Greater", "LessOrEqual": "GreaterOrEqual"',
      '{"Less": "Less", "LessOrEqual": "GreaterOrEqual"', RULES, "0 < T read as T < 0"),
    m("base-read-swapped-drop", B, "elif view.is_scalar(a, 0.0):  # 0 < T", "elif False:  # 0 < T",
      RULES, "drop the 0-first comparison branch"),
    m("base-select-nan", B, "return Select(tensor, else_, then, not zero, not nan,",
      "return Select(tensor, else_, then, not zero, nan,", RULES, "complement of a comparison: NaN not negative"),
    m("base-boundary-alpha", B, "if sel.includes_zero and at_zero_differs:", "if sel.includes_zero:",
      RULES, "boundary note also when alpha = 1"),
    m("base-boundary-nan-note", B, "    if sel.includes_nan:\n", "    if False:\n", RULES, "remove the NaN note"),
    m("base-extra-div", B, "            k /= value", "            k *= value", RULES, "positive-only constant multiplies"),
    m("base-extra-value-match", B, "if (tensor is not None and cand is tensor) or cand_value == value:",
      "if tensor is not None and cand is tensor:", RULES, "constants matched only by identity"),
    m("base-extra-k-mul", B, "        k *= value\n    return leaves, k", "        k += value\n    return leaves, k",
      RULES, "alpha = sum instead of product"),
    m("base-factors-neg", B, "out.consts.append((None, -1.0))", "out.consts.append((None, 1.0))",
      RULES, "Neg read as +1"),
    m("base-finish-dtype", B, "        if dtype != site.dtype:\n", "        if False:\n", RULES,
      "drop the operand dtype check"),
    m("base-finish-f16-note", B, 'if site.dtype != "float32" and not site.caps.get("wrapped", True):',
      "if False:", RULES, "drop the un-wrapped 16-bit arithmetic note"),
    m("base-shapes-out", B, "if out is not None and out != target:", "if False:", RULES,
      "drop the result-shape check"),
    m("base-shapes-scalar-shortcut", B, 'if g is not None and g == a and site.caps.get("only_scalar_consts"):',
      "if g is not None and g == a:", RULES, "the result's shape not looked at with a non-scalar constant"),
    m("base-shapes-dynamic", B, 'if site.caps.get("only_scalar_consts"):', "if True:", RULES,
      "dynamic Expand even with non-scalar constants"),
    m("base-broadcast-one", B, "if x == y or y == 1:", "if x == y:", RULES, "broadcast of a 1 on the right"),
    m("base-scalar-ndim", B, "if value.ndim != 0:", "if value.ndim > 1:", RULES, "a [1] constant counts as scalar"),
    m("base-elu-alpha", B, "if elu_alpha(elu) == alpha:", "if True:", RULES, "any Elu, whatever its alpha"),
    m("base-dtype-none", B, "if len(names) == 1 and None not in names:", "if len(names) == 1:", RULES,
      "an unknown dtype accepted"),
    m("base-could-match", RR, "all(group & op_types for group in self.needs)",
      "any(group & op_types for group in self.needs)", RULES, "prefilter: any group instead of all",
      alts=[(B, "all(group & op_types for group in self.needs)", "any(group & op_types for group in self.needs)")]),
    # -- rewrite/rules/elu_select.py
    m("sel-no-cast-wrap", SEL, "attempts = [True, False] if cast is not None else [False]", "attempts = [False]",
      RULES, "remove the Cast-wrap attempt"),
    m("sel-no-f32-fallback", SEL, "attempts = [True, False] if cast is not None else [False]",
      "attempts = [True] if cast is not None else [False]", RULES, "no float32 reading after a failed wrap"),
    m("sel-positive-one", SEL, "[v for _, v in pos.consts] not in ([1.0], [])",
      "[v for _, v in pos.consts] not in ([1.0], [], [2.0])", RULES, "Where(.., 2) accepted as Where(.., 1)"),
    m("sel-leaves", SEL, "if len(leaves) != 1:", "if len(leaves) > 1:", RULES, "no ELU factor accepted"),
    m("sel-exp-reads", SEL, "if view.value_key(exp.inputs[0]) != view.value_key(compared):", "if False:",
      RULES, "Exp of another tensor accepted"),
    m("sel-alpha-k", SEL, "alpha = np.float32(k)", "alpha = np.float32(1.0)", RULES, "alpha ignored"),
    m("sel-add-reads", SEL, "if not _same_values(view, read, compared):", "if False:", RULES,
      "Y + alpha of another tensor accepted"),
    m("sel-extra-const", SEL, "if np.float32(k) != ONE:", "if False:", RULES,
      "extra constant factor in the output form accepted",
      alts=[(SEL, "if np.float32(k) != np.float32(1):", "if False:")]),
    m("sel-selu-guard", SEL, "if _is_selu(view, elu):", "if False:", RULES + REAL, "remove the SELU guard"),
    m("sel-selu-scale", SEL, "if view.uniform(other) == SELU_SCALE:", "if True:", RULES + REAL,
      "any Mul after Elu(SELU alpha) counts as SELU"),
    m("sel-selu-alpha", SEL, "    if elu_alpha(elu) != SELU_ALPHA:\n        return False\n", "", RULES + REAL,
      "any Elu before Mul(1.0507) counts as SELU"),
    m("sel-input-exact", SEL, "        site.exact = False\n        site.notes.append(ROUNDING_NOTE",
      "        site.exact = True\n        site.notes.append(ROUNDING_NOTE", RULES, "input form called exact"),
    m("sel-rounding-note", SEL, "site.notes.append(ROUNDING_NOTE + (", "site.notes.extend([] and (", RULES,
      "remove the rounding note"),
    m("sel-input-boundary-alpha", SEL, 'boundary_notes(sel, alpha != ONE, "X")',
      'boundary_notes(sel, True, "X")', RULES, "boundary note for alpha = 1 (input form)",
      alts=[(SEL, 'boundary_notes(sel, alpha != np.float32(1), "X")', 'boundary_notes(sel, True, "X")')]),
    m("sel-output-reject-always", SEL, "and differs_at_zero and (elu is None or elu_alpha(elu) != alpha):",
      "and differs_at_zero:", RULES, "<= with alpha != 1 rejected even after its Elu"),
    m("sel-output-reject-never", SEL, "and differs_at_zero and (elu is None or elu_alpha(elu) != alpha):",
      "and differs_at_zero and False:", RULES, "<= with alpha != 1 fused without an Elu"),
    m("sel-output-differs", SEL, "differs_at_zero = alpha != ONE", "differs_at_zero = True", RULES,
      "<= never exact", alts=[(SEL, "differs_at_zero = alpha != np.float32(1)", "differs_at_zero = True")]),
    m("sel-positive-one-exact", SEL, "    if positive_is_one:\n        site.exact = False\n",
      "    if positive_is_one:\n        pass\n", RULES, "dY * 1 called exact"),
    m("sel-sub-sign", SEL, "[(a, b, -1.0)]", "[(a, b, 1.0)]", RULES, "Sub(Y, c) read as Y + c"),
    m("sel-add-order", SEL, "[(a, b, 1.0), (b, a, 1.0)]", "[(a, b, 1.0)]", RULES, "Add(c, Y) not read"),
    m("sel-same-values-shape", SEL, "return sa is not None and sa == sb", "return True", RULES + REAL,
      "views of different shapes accepted"),
    m("sel-same-values-view", SEL, "if view.view_source(a) is not view.view_source(b):", "if True:",
      RULES + REAL, "remove view_source handling (reshaped Y)"),
    # -- the rule modules
    m("wie-needs-celu", "rewrite/rules/where_input_exp.py", 'needs(COMPARISON_OPS, "Exp", ("Elu", "Celu"))',
      'needs(COMPARISON_OPS, "Exp", ("Elu",))', RULES + REAL, "prefilter forgets Celu"),
    m("wie-pattern-exp", "rewrite/rules/where_input_exp.py", 'negative_ops=("Exp",)',
      'negative_ops=("Log",)', RULES, "pattern never matches"),
    m("woa-needs-sub", "rewrite/rules/where_output_add.py", 'needs(COMPARISON_OPS, ("Add", "Sub"))',
      'needs(COMPARISON_OPS, ("Add",))', RULES, "prefilter forgets Sub"),
    m("woa-pattern-sub", "rewrite/rules/where_output_add.py", 'negative_ops=("Add", "Sub")',
      'negative_ops=("Add",)', RULES, "Sub(Y, -alpha) not matched"),
    m("mwf-order", "rewrite/rules/mul_where_factor.py",
      "((mul.inputs[1], mul.inputs[0]), (mul.inputs[0], mul.inputs[1]))", "((mul.inputs[1], mul.inputs[0]),)",
      RULES, "Mul(Where, dY) not matched"),
    m("mwf-const-grads", "rewrite/rules/mul_where_factor.py",
      "if where is None or view.uniform(grads) is not None:", "if where is None:", RULES,
      "a constant accepted as dY"),
    m("mwf-kind", "rewrite/rules/mul_where_factor.py",
      'kind = "input" if any(view.producer_op(t, "Exp") for t in leaves) else "output"', 'kind = "output"',
      RULES, "exp form of the factor not read"),
    m("mam-one", "rewrite/rules/min_add_mul.py", "if one is None or np.float32(one) != np.float32(1):",
      "if one is None:", RULES, "Add(Min(Y, 0), c) for any c"),
    m("mam-min-swapped", "rewrite/rules/min_add_mul.py", "elif view.is_scalar(a, 0.0):", "elif False:",
      RULES, "Min(0, Y) not read"),
    m("mam-exact", "rewrite/rules/min_add_mul.py", "    site.exact = False\n    site.notes.append(",
      "    site.exact = True\n    site.notes.append(", RULES, "min form called exact"),
    m("feg-domain", "rewrite/rules/foreign_elu_grad.py", "if node.domain not in KNOWN_DOMAINS:", "if False:",
      RULES, "EluGrad of an unknown domain converted"),
    m("feg-own-domain", "rewrite/rules/foreign_elu_grad.py", "if node.domain == DOMAIN or len(node.inputs) != 2",
      "if len(node.inputs) != 2", RULES, "our own EluGrad is a candidate"),
    # -- rewrite/graph_view.py
    m("gv-strip-one", GV, "if self.is_one(b) and self.const(a) is None", "if False and self.const(a) is None",
      RULES, "Mul-by-1 not looked through"),
    m("gv-strip-shape", GV, "return s is None or len(s) == 0 or all(d == 1 for d in s)", "return True or s is None or len(s) == 0 or all(d == 1 for d in s)",
      RULES, "Mul by a broadcasting ones tensor looked through"),
    m("gv-value-key-cast", GV, "if node is not None and node.inputs:\n            return (\"Cast\"",
      "if False:\n            return (\"Cast\"", RULES, "one Cast per use no longer equal"),
    m("gv-view-source", GV, "node = self.producer_op(tensor, *VIEW_OPS)\n", "node = None\n", RULES + REAL,
      "view_source looks through nothing"),
    m("gv-uniform-all", GV, "                return flat[0] if np.all(flat.view(np.uint32) == flat[:1].view(np.uint32)) else None\n            if isinstance",
      "                return flat[0]\n            if isinstance", RULES, "a non-uniform small constant read as its first element"),
    m("gv-cos-default", GV, "return np.float32(0)", "return np.float32(1)", RULES,
      "ConstantOfShape without value read as 1"),
    # (the ELU-only queries moved from the GraphView to rewrite/rules/base.py: alts for older revisions)
    m("gv-celu-consumers", B, 'if user.op == "Elu" or user.op == "Celu" and elu_alpha(user) == np.float32(1):',
      'if user.op == "Elu" or user.op == "Celu":', RULES + REAL, "Celu of any alpha taken as an Elu",
      alts=[(GV, 'if user.op == "Elu" or user.op == "Celu" and elu_alpha(user) == np.float32(1):',
             'if user.op == "Elu" or user.op == "Celu":')]),
    m("gv-celu-elu-of", B, 'if node.op == "Elu" or node.op == "Celu" and elu_alpha(node) == np.float32(1):',
      'if node.op == "Elu" or node.op == "Celu":', RULES + REAL, "elu_of: Celu of any alpha",
      alts=[(GV, 'if node.op == "Elu" or node.op == "Celu" and elu_alpha(node) == np.float32(1):',
             'if node.op == "Elu" or node.op == "Celu":')]),
    m("gv-downcast-output", GV, "if tensor.name in self.output_names or len(users) != 1", "if len(users) != 1",
      RULES, "a graph output wrapped by its Cast"),
    m("gv-consumers-scope", GV, "return [n for n in tensor.outputs if id(n) in self.visible]",
      "return list(tensor.outputs)", RULES, "consumers in nested subgraphs counted"),
    m("gv-castlike-exact", GV, "(0.0, 0.5, 1.0, 2.0)", "(0.0, 0.5, 1.0, 2.0, 0.1)", RULES,
      "CastLike of an inexact constant read"),
    # -- rewrite/surgery.py: the single-graph path (ProtoGraph)
    m("su-order-after", SU, "if where is not None and where > here:\n                    return None",
      "if False:\n                    return None", RULES, "an EluGrad before the node it reads (no toposort)"),
    m("su-export-linked", SU, "if node is None or not node.linked or (len(node.inputs), len(node.outputs)) == node.arity:",
      "if node is None or True:",
      RULES + ["tests/rewrite/test_rule_max_pool_backward.py"], "a changed node written as its original proto"),
    m("su-keep-dangling", SU, "if name and name not in consumers and name not in outputs\n",
      "if False\n", RULES, "nodes nothing read before the edit removed"),
    m("su-consumer-slots", SU, "                    at.append(i)\n", "                    pass\n", RULES,
      "a tensor's second reader not counted"),
    # -- rewrite/lower.py
    m("lower-less", LOW, 'gs.Node("Less", f"{base}/less"', 'gs.Node("LessOrEqual", f"{base}/less"', LOWER,
      "<= in the lowering", alts=[(LOW_EG, 'gs.Node("Less", f"{base}/less"', 'gs.Node("LessOrEqual", f"{base}/less"')]),
    m("lower-zero-negzero", LOW, 'zero = gs.Constant(f"{base}/zero", np.array(0.0, dtype=f32))',
      'zero = gs.Constant(f"{base}/zero", np.array(-0.0, dtype=f32))', LOWER, "compare with -0.0",
      alts=[(LOW_EG, 'zero = gs.Constant(f"{base}/zero", np.array(0.0, dtype=f32))',
             'zero = gs.Constant(f"{base}/zero", np.array(-0.0, dtype=f32))')],
      equivalent="IEEE 754 compares -0.0 equal to 0.0: Less(x, -0.0) is Less(x, 0.0) for every x"),
    m("lower-default-alpha", LOW, "1.0 if alpha is None else float(alpha)", "0.0 if alpha is None else float(alpha)",
      LOWER, "default alpha 0", alts=[(LOW_EG, "1.0 if alpha is None else float(alpha)",
                                       "0.0 if alpha is None else float(alpha)")]),
    m("lower-f16-round", LOW, '    if dtype == "float16":\n        pt = var', '    if False:\n        pt = var', LOWER,
      "float16 product not rounded (select in float32)",
      alts=[(LOW_EG, '    if dtype == "float16":\n        pt = var', '    if False:\n        pt = var')]),
    m("lower-bf16-f32", LOW, '    elif dtype == "bfloat16":\n        g, out = g32', '    elif False:\n        g, out = g32',
      LOWER, "bfloat16 select not in float32",
      alts=[(LOW_EG, '    elif dtype == "bfloat16":\n        g, out = g32', '    elif False:\n        g, out = g32')]),
    m("lower-drop-opset", LOW, "    if DOMAIN not in used:\n", "    if False:\n", LOWER, "keep the ai.ortops import"),
    m("lower-fn-opset", LOW, "if not any(n.domain == DOMAIN for n in f.node):", "if False:", LOWER,
      "keep the functions' ai.ortops import"),
    m("lower-report-exact", LOW, "shortest(alpha), exact=True,", "shortest(alpha), exact=False,",
      LOWER, "report says lowering is not exact"),
    m("lower-report-alpha", LOW, "shortest(alpha), exact=True,", "shortest(alpha) * 2, exact=True,",
      LOWER, "report prints a wrong alpha"),
    # -- ort_ops/ops/elu_grad.py: the reference
    m("ref-less-equal", REF, "negative = a < np.float32(0)", "negative = a <= np.float32(0)", REFERENCE, "< to <="),
    m("ref-quiet-bit", REF, "quiet = np.uint32(0x00400000)", "quiet = np.uint32(0x00200000)", REFERENCE,
      "the quiet bit"),
    m("ref-nan-order", REF, "bits = np.where(np.isnan(g), g.view",
      "bits = np.where(np.isnan(g) & ~np.isnan(alpha32), g.view", REFERENCE, "alpha's NaN before grads'"),
    m("ref-alpha-nan-ignored", REF, "fallback = (alpha32.view(np.uint32) | quiet) if np.isnan(alpha32) else",
      "fallback = (alpha32.view(np.uint32) | quiet) if False else", REFERENCE, "alpha's NaN not propagated"),
    m("ref-default-nan", REF, "else np.uint32(DEFAULT_NAN_BITS)", "else np.uint32(0x7FC00000)", REFERENCE,
      "the default NaN"),
    m("ref-alpha-f64", REF, "alpha32 = np.float32(alpha)", "alpha32 = np.float64(alpha)", REFERENCE,
      "alpha in float64"),
    m("ref-nan-mask", REF, "nan = negative & np.isnan(p)", "nan = np.isnan(p)", REFERENCE,
      "NaN fix-up also on the grads side",
      equivalent="y takes p only where negative, so a fixed-up p elsewhere is never read"),
    m("ref-nan-any", REF, "if nan.any():", "if True:", REFERENCE, "NaN fix-up always",
      equivalent="without a NaN the fix-up's np.where(nan, ..., p) returns p: the test only skips work"),
    m("ref-dtype-check", REF, "    if grads.dtype != activations.dtype:\n", "    if False:\n", REFERENCE,
      "no dtype check"),
    m("ref-shape-check", REF, "    if grads.shape != activations.shape:\n", "    if False:\n", REFERENCE,
      "no shape check (NumPy broadcasts)"),
    m("ref-default-alpha", REF, "DEFAULT_ALPHA = 1.0", "DEFAULT_ALPHA = 0.5", REFERENCE + ["tests/ops/elu_grad/test_cpu_kernel.py::test_ranks_and_alphas"],
      "default alpha"),
    m("ref-product-order", REF, "p = g * (a + alpha32)", "p = (g * a) + (g * alpha32)", REFERENCE,
      "distributed product (different rounding)"),
    # -- ort_ops/ops/definition.py and ort_ops/schemas.py
    m("def-defaults", "ort_ops/ops/definition.py", "return {a.name: a.default for a in self.attributes}",
      "return {a.name: a.default * 0 for a in self.attributes}", SCHEMA + ["tests/rewrite/test_lower.py"],
      "defaults() report 0"),
    m("def-shape", "ort_ops/ops/definition.py", 'shape: str = "elementwise"', 'shape: str = "broadcast"',
      SCHEMA, "no schema builder", alts=[("ort_ops/ops/definition.py", 'shape: str | ShapeRule = "elementwise"',
                                          'shape: str | ShapeRule = "broadcast"')]),
    m("sch-dtype", SCH, "if a.elem_type and g.elem_type and a.elem_type != g.elem_type:", "if False:", SCHEMA,
      "inference: no dtype check"),
    m("sch-rank", SCH, "if len(gd) != len(ad) or any(", "if any(", SCHEMA, "inference: rank mismatch accepted"),
    m("sch-known-dims", SCH, "known(x) and known(y) and x.dim_value != y.dim_value", "x.dim_value != y.dim_value",
      SCHEMA, "inference: symbolic dims compared as 0"),
    m("sch-out-shape", SCH, "            out.tensor_type.shape.CopyFrom(g.shape)\n", "            pass\n", SCHEMA,
      "inference: no output shape"),
    m("sch-register-twice", SCH, "if not onnx.defs.has(schema.name, schema.since_version, schema.domain):",
      "if True:", SCHEMA, "register again"),
    # -- ort_ops/input_ranges.py
    m("rng-upper", INR, "bad = (values < 0) | (values >= rng.size)", "bad = (values < 0) | (values > rng.size)",
      RANGES, "label == size accepted"),
    m("rng-lower", INR, "bad = (values < 0) | (values >= rng.size)", "bad = (values < -1) | (values >= rng.size)",
      RANGES, "label -1 accepted"),
    m("rng-ignored", INR, "            bad &= values != ignore\n", "            pass\n", RANGES,
      "ignore_index not honoured"),
    m("rng-notequal", INR, 'elif op in ("Equal", "NotEqual"):', 'elif op in ("Equal",):', RANGES,
      "NotEqual comparisons not read"),
    m("rng-min", INR, "size, used_by = min(sizes)", "size, used_by = max(sizes)", RANGES,
      "the largest indexed axis bounds the label"),
    m("rng-describe", INR, 'return f"0 to {self.size - 1}{extra}"', 'return f"0 to {self.size}{extra}"',
      RANGES, "message off by one"),
    m("rng-const-size", INR, "np.prod(t.dims, dtype=np.int64) <= 16", "np.prod(t.dims, dtype=np.int64) <= 0",
      RANGES, "scalar initializers not read"),
    m("rng-constant-node", INR, '                if a.name == "value" and a.t.data_location',
      '                if False and a.t.data_location', RANGES, "Constant nodes not read"),
    m("rng-pass-cast", INR, '"Identity", "Cast", "Expand"}', '"Identity", "Expand"}', RANGES,
      "Cast not followed"),
    m("rng-slot", INR, '("GatherElements", "ScatterElements", "Gather") and slot == 1:',
      '("GatherElements", "ScatterElements", "Gather") and slot in (0, 1):', RANGES,
      "the data input counted as an index"),
    m("rng-axis", INR, 'axis = next((a.i for a in node.attribute if a.name == "axis"), 0)',
      'axis = next((a.i for a in node.attribute if a.name == "axis"), 1)', RANGES, "default axis 1"),
    m("rng-int-only", INR, "        if elem.get(name) not in _INT_TYPES:\n            continue\n", "", RANGES,
      "float inputs traced as labels"),
    m("rng-where-slot", INR, 'or op == "Where" and slot in (1, 2)', 'or op == "Where" and slot in (0, 1, 2)',
      RANGES, "Where's condition followed as a value"),
    # AdamUpdate's optional cann_scalars (ApplyAdamW's bias-corrected lr and epsilon) and the fused
    # Adam graph's nodes forming them
    m("adam-cann-check", "ort_ops/ops/adam_update.py",
      "allowed = CANN_SCALARS_RTOL * np.maximum(np.abs(want), CANN_SCALARS_FLOOR)", "allowed = np.full(3, np.inf)",
      ADAM, "inconsistent cann_scalars accepted by the reference"),
    m("adam-k2", "ort_ops/ops/adam_update.py", "k2 = (1.0 - float(f32(beta2))) / float(f32(1.0 - b2))", "k2 = 1.0",
      ADAM, "CANN's second-moment factor not folded back"),
    m("adam-shared-inputs", "ort_ops/training/optim.py", "            ins.extend(shared)\n", "", ADAM,
      "AdamUpdate nodes not given the shared cann_scalars"),
    # the placement pass's Transpose folds
    m("fold-perm", "rewrite/placement/transposes.py", "if _perm(t, shapes) != [1, 0] or", "if", FOLD, "any 2-D perm folded as a transpose"),
    m("fold-inverse", "rewrite/placement/transposes.py", " or any(p[q[j]] != j for j in range(len(q)))", "", FOLD,
      "any Transpose pair folded away"),
    m("fold-graph-output", "rewrite/placement/transposes.py", " or t.output[0] in kept_names:", ":", FOLD, "graph outputs and subgraph reads folded"),
    m("fold-gemm-c", "rewrite/placement/transposes.py", "        if slot > 1:  # Gemm's C: no flag for it\n            return None\n", "", FOLD,
      "a Transpose read as Gemm's C folded"),
    m("fold-matmul-rank", "rewrite/placement/transposes.py", " or len(a) != 2 or len(b) != 2:", ":", FOLD, "a batched MatMul made a Gemm"),
    m("fold-can-place", "rewrite/placement/transposes.py", "    if not all(can_place(new) for new in plans.values()):\n        return None\n", "",
      FOLD, "folded into a Gemm that is not placed"),
]


# --- running --------------------------------------------------------------------------------------
class Stop(Exception):
    """SIGTERM / SIGHUP: unwind (restoring the file) like Ctrl-C."""


def _on_signal(signum, frame):
    raise Stop(f"signal {signum}")


def git(repo, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)


def check_clean(repo: str, files: list[str]) -> list[str]:
    """Reasons the repo is not safe to mutate (empty: safe)."""
    if git(repo, "rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        return [f"{repo} is not a git checkout: refusing to mutate files git cannot restore"]
    problems = []
    for f in files:
        if git(repo, "ls-files", "--error-unmatch", "--", f).returncode != 0:
            problems.append(f"{f} is not tracked by git")
    status = git(repo, "status", "--porcelain", "--", *files).stdout.strip()
    if status:
        problems.append("uncommitted changes to files this run would mutate (commit or stash them):\n  "
                        + status.replace("\n", "\n  "))
    return problems


def apply_once(text: str, mut: Mutation) -> str:
    n = text.count(mut.old)
    if n != 1:
        raise ValueError(f"{mut.id}: the snippet occurs {n} times in {mut.file} (must be exactly once): {mut.old!r}")
    return text.replace(mut.old, mut.new, 1)


def run_tests(python: str, repo: str, tests: list[str], timeout: float, extra: list[str]):
    """(pytest exit code or None on timeout, seconds, output tail)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    cmd = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *extra, *tests]
    start = time.monotonic()
    # own process group: a timeout or Ctrl-C here ends pytest and everything it started
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, code = proc.communicate()[0] or "", None
    except BaseException:
        _kill_group(proc)
        raise
    return code, time.monotonic() - start, out


def _kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            continue


def first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" - ")[0][:160]
    lines = [ln for ln in output.strip().splitlines() if ln.strip()]
    return lines[-1][:160] if lines else ""


def write_restoring(path: str, data: bytes, stat: os.stat_result | None = None) -> None:
    with open(path, "r+b") as f:
        f.write(data)
        f.truncate()
    if stat is not None:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def main(argv=None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    top = git(here, "rev-parse", "--show-toplevel").stdout.strip() or os.path.dirname(here)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", default=top, help="checkout to mutate and test in (default: %(default)s)")
    p.add_argument("--python", help="interpreter for pytest (default: REPO/.venv/bin/python, else this one)")
    p.add_argument("--only", nargs="+", metavar="ID", help="run only these mutation ids (glob patterns: lower-*)")
    p.add_argument("--tests", nargs="+", metavar="PATH", help="run these tests for every mutation instead")
    p.add_argument("--timeout", type=float, default=600, help="seconds per pytest run (default %(default)s)")
    p.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the selected tests")
    p.add_argument("--pytest-arg", action="append", default=[], help="extra pytest argument (repeatable)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = p.parse_args(argv)

    repo = os.path.abspath(args.repo)
    muts = [x for x in MUTATIONS if not args.only or any(fnmatch.fnmatchcase(x.id, o) for o in args.only)]
    muts = [replace(x, tests=list(args.tests or x.tests)) for x in muts]
    if args.list:
        for x in muts:
            print(f"{x.id:28} {x.file:34} {x.what}\n{'':28} tests: {' '.join(x.tests)}")
        return 0
    if not muts:
        print("no mutation selected", file=sys.stderr)
        return 2
    if not os.path.isdir(repo):
        print(f"mutation_check: {repo} is not a directory", file=sys.stderr)
        return 2
    ids = [x.id for x in MUTATIONS]
    if len(set(ids)) != len(ids):
        print("duplicate mutation ids", file=sys.stderr)
        return 2
    python = args.python or (os.path.join(repo, ".venv", "bin", "python")
                             if os.path.exists(os.path.join(repo, ".venv", "bin", "python")) else sys.executable)

    found = [resolve(repo, x) for x in muts]
    unresolved = [r for r in found if isinstance(r, str)]
    muts = [r for r in found if not isinstance(r, str)]
    for why in unresolved:
        print(f"ERROR (skipped) {why}", file=sys.stderr)
    if not muts:
        print("mutation_check: no selected mutation applies to this checkout", file=sys.stderr)
        return 2
    missing = sorted({t for x in muts for t in x.tests if not os.path.exists(os.path.join(repo, t.split("::")[0]))})
    if missing:
        print("note: left out (not in this checkout): " + ", ".join(missing), flush=True)
        for x in muts:
            x.tests = [t for t in x.tests if t not in missing]
    files = sorted({x.file for x in muts})
    problems = check_clean(repo, files)
    problems += [f"{x.id}: none of its tests exist in {repo}" for x in muts if not x.tests]
    originals = {}
    for f in files:
        path = os.path.join(repo, f)
        if not os.path.isfile(path):
            problems.append(f"{f}: no such file in {repo}")
            continue
        with open(path, "rb") as fh:
            originals[f] = fh.read()
    if problems:
        print("mutation_check: refusing to run:\n" + "\n".join(f"- {q}" for q in problems), file=sys.stderr)
        return 2

    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started in the background
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)

    if not args.no_baseline:
        union = list(dict.fromkeys(t for x in muts for t in x.tests))
        print(f"baseline: {len(union)} test path(s) unmutated ...", flush=True)
        code, secs, out = run_tests(python, repo, union, args.timeout * 3, args.pytest_arg)
        if code != 0:
            print(f"baseline FAILED (exit {code}, {secs:.0f}s): mutants would be 'killed' for nothing\n"
                  + out[-3000:], file=sys.stderr)
            return 2
        print(f"baseline passed ({secs:.0f}s)", flush=True)

    results = [{"id": why.split(":")[0], "file": "", "what": "", "status": "ERROR (snippet not found)",
                "seconds": 0.0, "detail": why} for why in unresolved]
    interrupted = None
    try:
        for i, x in enumerate(muts, 1):
            path = os.path.join(repo, x.file)
            st = os.stat(path)
            original = originals[x.file]
            mutated = apply_once(original.decode(), x).encode()
            try:
                write_restoring(path, mutated)
                code, secs, out = run_tests(python, repo, x.tests, args.timeout, args.pytest_arg)
            finally:
                write_restoring(path, original, st)
                with open(path, "rb") as fh:
                    if fh.read() != original:
                        raise RuntimeError(f"could not restore {path}: run `git -C {repo} checkout -- {x.file}`")
            if code is None:
                status = "killed (timeout)"
            elif code in (1, 2):  # tests failed / collection or import error (e.g. a syntax error)
                status = "ERROR (killed, but marked equivalent)" if x.equivalent else "killed"
            elif code == 0:
                status = "equivalent" if x.equivalent else "SURVIVED"
            else:
                status = f"ERROR (pytest exit {code})"
            r = {**asdict(x), "status": status, "seconds": round(secs, 1),
                 "detail": first_failure(out) if code != 0 else ""}
            results.append(r)
            print(f"[{i:3}/{len(muts)}] {status:16} {secs:6.1f}s  {x.id:28} {r['detail']}", flush=True)
    except (KeyboardInterrupt, Stop) as e:
        interrupted = e
        print(f"\ninterrupted ({type(e).__name__}): every file restored", file=sys.stderr)
    finally:
        leftover = git(repo, "status", "--porcelain", "--", *files).stdout.strip()
        if leftover:
            print(f"WARNING: git reports changes after the run:\n{leftover}", file=sys.stderr)

    killed = [r for r in results if r["status"].startswith("killed")]
    survived = [r for r in results if r["status"] == "SURVIVED"]
    equivalent = [r for r in results if r["status"] == "equivalent"]
    errors = [r for r in results if r["status"].startswith("ERROR")]
    print(f"\n{len(results)} mutation(s): {len(killed)} killed, {len(equivalent)} equivalent, "
          f"{len(survived)} SURVIVED, {len(errors)} error(s)")
    for r in equivalent:
        print(f"  equivalent {r['id']:26} {r['file']}: {r['equivalent']}")
    for r in survived:
        print(f"  SURVIVED {r['id']:28} {r['file']}: {r['what']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"repo": repo, "results": results}, fh, indent=1)
    if interrupted is not None:
        return 130
    return 2 if errors else 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
