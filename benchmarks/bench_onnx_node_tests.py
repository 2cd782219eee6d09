"""ONNX's own node test cases (onnx/backend/test/data/node) of every op type placement has a rule for, on
the CANN EP (the ACL simulator, ``cann_ep.session``: placed as default): does each case give ONNX's
expected outputs, and does every node run on the CANN EP (ORT's profile, not the placement report)?

Per op type: cases, cases whose outputs match (ONNX's backend-test tolerance: rtol 1e-3, atol 1e-7;
integers and bools exact; NaN where expected), cases wholly on CANN; then each case that does not run
wholly on CANN or does not match, with the reason (the placement report's, or the error). Cases whose
model ORT's CPU EP cannot load (an opset or type it lacks) and cases with element types onnxruntime's
Python binding cannot feed (float8, int4, bfloat16) are counted apart. The test data ships with
onnx; this reads the copy in ``.venv-ort-training`` (onnx 1.17: IR <= 10, which onnxruntime-cann 1.24
accepts) unless ``--data`` names another.

    .venv-cann/bin/python -m benchmarks.bench_onnx_node_tests [--only Gather,Clip] [--json out.json]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
RTOL, ATOL = 1e-3, 1e-7  # onnx.backend.test.runner's defaults
# onnxruntime's Python binding cannot feed or return these element types (float8, int4, bfloat16 as numpy):
# such cases say nothing about the EP and are counted apart
BINDING_CANNOT = ("No corresponding Numpy type", "can't be converted to MLDataType",
                  "Unexpected input data type. Actual: (tensor(uint16))")


def default_data() -> str | None:
    found = glob.glob(str(REPO / ".venv-ort-training/lib/python3*/site-packages/onnx/backend/test/data/node"))
    return found[0] if found else None


def load_case(case_dir: Path):
    """(model, feeds, expected outputs) of a node test directory, or None if it has no tensor data set."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(case_dir / "model.onnx"))
    data = case_dir / "test_data_set_0"
    if not data.is_dir():
        return None
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    feeds, expected = {}, []
    for kind, target in (("input", feeds), ("output", expected)):
        for k in range(len(list(data.glob(f"{kind}_*.pb")))):
            tensor = onnx.TensorProto()
            try:
                tensor.ParseFromString((data / f"{kind}_{k}.pb").read_bytes())
                value = numpy_helper.to_array(tensor)
            except Exception:  # a sequence, optional or map value: not a tensor case
                return None
            if kind == "input":
                if k >= len(names):
                    return None
                target[names[k]] = value
            else:
                target.append(value)
    return model, feeds, expected


def matches(got, want) -> bool:
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if want.dtype.kind in "biuU" or want.dtype == bool:
        return bool(np.array_equal(got, want))
    return bool(np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=RTOL, atol=ATOL, equal_nan=True))


def run_case(model, feeds, expected, tmp: str) -> dict:
    import onnxruntime as ort

    from ort_ops import cann_ep

    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as e:  # any load failure: the CPU EP lacks this case
        return {"status": "cpu cannot load", "reason": str(e).splitlines()[0][:160]}
    try:
        session = cann_ep.session(model, profile_prefix=os.path.join(tmp, "p"))
    except Exception as e:
        return {"status": "refused", "reason": str(e).splitlines()[0][:200]}
    placement = session.placement
    try:
        got = session.run(None, feeds)
    except Exception as e:
        text = str(e).splitlines()[0]
        if any(m in text for m in BINDING_CANNOT):
            return {"status": "binding cannot feed", "reason": text[:160]}
        return {"status": "failed", "reason": text[:200]}
    runs = cann_ep.node_runs(session)
    off = sorted({(r.op_type, r.provider) for r in runs if r.provider != cann_ep.PROVIDER and
                  not r.op_type.startswith("Memcpy")})
    ok = len(got) == len(expected) and all(matches(g, w) for g, w in zip(got, expected))
    why = "; ".join(f"{n.op_type}: {n.reason}" for n in placement.nodes if n.where == "cpu")
    return {"status": "ok", "match": ok, "on_cann": not off, "off": off, "reason": why[:200]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=None, help="onnx's backend/test/data/node directory")
    p.add_argument("--only", default="", help="comma-separated op types")
    p.add_argument("--soc", default="Ascend910B1", help="ACLSIM_SOC_NAME of the simulated device")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    data = args.data or default_data()
    if data is None or not os.path.isdir(data):
        p.error("no ONNX node test data: run scripts/setup.sh (it creates .venv-ort-training) or pass --data")
    os.environ["ACLSIM_SOC_NAME"] = args.soc
    import onnx
    import onnxruntime as ort

    from ort_ops import cann_ep
    from ort_ops.rewrite.placement.ops import RULES

    if cann_ep.PROVIDER not in ort.get_available_providers():
        p.error(f"onnxruntime {ort.__version__} here has no {cann_ep.PROVIDER} (run it with .venv-cann/bin/python)")
    cann_ep.use_simulator()
    wanted = set(args.only.split(",")) if args.only else set(RULES)
    by_op: dict[str, list] = defaultdict(list)
    for case_dir in sorted(Path(data).iterdir()):
        expanded = case_dir.name.endswith("_expanded") or "_expanded_" in case_dir.name
        if expanded or not (case_dir / "model.onnx").exists():
            continue
        model = onnx.load(str(case_dir / "model.onnx"), load_external_data=False)
        ops = {n.op_type for n in model.graph.node if n.domain in ("", "ai.onnx")}
        if len(model.graph.node) != 1 or not ops <= wanted or not ops:
            continue
        by_op[ops.pop()].append(case_dir)
    print(f"onnxruntime {ort.__version__} CANN EP on the ACL simulator (SoC {args.soc}); ONNX node tests from {data}")
    print(f"{'op type':22s} {'cases':>5s} {'match':>5s} {'on CANN':>7s} {'CPU EP lacks':>12s} {'binding':>7s}")
    results, totals, notes = {}, defaultdict(int), []
    with tempfile.TemporaryDirectory() as tmp:
        for op in sorted(by_op):
            counts = defaultdict(int)
            for case_dir in by_op[op]:
                loaded = load_case(case_dir)
                if loaded is None:
                    continue
                r = run_case(*loaded, tmp)
                results[case_dir.name] = {"op": op, **r}
                if r["status"] in ("cpu cannot load", "binding cannot feed"):
                    counts["cpu_lacks" if r["status"] == "cpu cannot load" else "binding"] += 1
                    continue
                counts["cases"] += 1
                counts["match"] += bool(r.get("match"))
                counts["on_cann"] += bool(r.get("on_cann"))
                if r["status"] != "ok" or not r["match"] or not r["on_cann"]:
                    if r["status"] != "ok":
                        what = r["status"]
                    else:
                        off = "" if r["on_cann"] else f"off CANN {r['off']}"
                        what = ("no match " if not r["match"] else "") + off
                    notes.append(f"  {case_dir.name}: {what.strip()}: {r['reason']}")
            for k, v in counts.items():
                totals[k] += v
            row = f"{counts['cases']:5d} {counts['match']:5d} {counts['on_cann']:7d} {counts['cpu_lacks']:12d}" \
                  f" {counts['binding']:7d}"
            print(f"{op:22s} {row}")
    n = max(totals["cases"], 1)
    print(f"{'all':22s} {totals['cases']:5d} {totals['match']:5d} {totals['on_cann']:7d} {totals['cpu_lacks']:12d}"
          f" {totals['binding']:7d}"
          f"   ({100 * totals['match'] / n:.1f} % match, {100 * totals['on_cann'] / n:.1f} % wholly on CANN)")
    print("cases not matching or not wholly on CANN:")
    print("\n".join(notes) if notes else "  none")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
