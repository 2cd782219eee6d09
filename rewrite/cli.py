"""Command line: ``python -m rewrite fuse IN OUT [--strict] [--report R.json] [--validate]``,
``python -m rewrite lower IN OUT``, ``python -m rewrite inspect IN [--strict]``.

Exit codes: 0 success; 1 validation failed; 2 unreadable / invalid input or failed rewrite.
"""

from __future__ import annotations

import argparse
import os
import sys

import onnx

from rewrite.fuse import fuse_elu_grad, inspect_elu_grad
from rewrite.lower import lower_elu_grad
from rewrite.model_io import ModelError, load, save
from rewrite.report import RewriteReport


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rewrite", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    fuse = sub.add_parser("fuse", help="replace ELU backward subgraphs by ai.ortops::EluGrad")
    fuse.add_argument("input")
    fuse.add_argument("output")
    fuse.add_argument("--strict", action="store_true", help="fuse only bit-exact sites")
    fuse.add_argument("--report", metavar="FILE.json", help="write the report as JSON")
    fuse.add_argument("--validate", action="store_true", help="compare outputs numerically")
    lower = sub.add_parser("lower", help="replace EluGrad by standard ONNX ops")
    lower.add_argument("input")
    lower.add_argument("output")
    inspect = sub.add_parser("inspect", help="list candidate sites and why each would (not) fuse")
    inspect.add_argument("input")
    inspect.add_argument("--strict", action="store_true")
    return p


def _full(path: str) -> onnx.ModelProto:
    return onnx.load(path)  # with external data, for running


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        model = load(args.input)
        if args.command == "inspect":
            print(inspect_elu_grad(model, strict=args.strict).summary())
            return 0
        report = RewriteReport()
        if args.command == "fuse":
            result = fuse_elu_grad(model, strict=args.strict, report=report)
        else:
            result = lower_elu_grad(model, report=report)
        save(result, args.output, source_path=args.input)
        print(report.summary())
        if getattr(args, "report", None):
            tmp = args.report + ".tmp"
            with open(tmp, "w") as f:
                f.write(report.to_json())
            os.replace(tmp, args.report)
        if getattr(args, "validate", False):
            from rewrite.validate import validate

            if not validate(_full(args.input), _full(args.output)).ok:
                print("error: validation failed", file=sys.stderr)
                return 1
        return 0
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - one line for the user, never a traceback
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"error: {args.command} failed: {type(exc).__name__}: {msg}", file=sys.stderr)
        return 2
