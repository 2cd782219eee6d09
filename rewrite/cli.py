"""Command line: ``ortops-rewrite fuse IN OUT [--strict] [--elu-only] [--report R.json] [--validate [--inputs X.npz]]
[--elu-in-float32]``,
``ortops-rewrite lower IN OUT``, ``ortops-rewrite inspect IN [--strict] [--elu-only]`` (also ``python -m rewrite``).

``fuse`` applies every rule of :func:`rewrite.fuse_training` (the ELU backward -> EluGrad, the softmax
cross-entropy -> SoftmaxCrossEntropyLossAndGrad, the max-pool backward -> MaxPoolGrad); ``--elu-only``
only the ELU rules (:func:`rewrite.fuse_elu_grad`). ``lower`` lowers every ``ai.ortops`` op.

The input is checked first (``onnx.checker`` with ``full_check``): its defects are reported as its
own (``--elu-in-float32`` mends a bfloat16 ``Elu``, :mod:`rewrite.input_check`).
Nothing is written unless it is right: the output is checked (``onnx.checker`` with
``full_check``, then loaded in an ONNX Runtime session with the op library) and, with
``--validate``, compared with the input numerically, all *before* it replaces anything; on any
failure no output file exists afterwards (``--report`` is still written when asked). Output paths
that are the input, its external data, each other, or not regular files are refused.

Exit codes: 0 success; 1 validation failed; 2 unreadable / invalid input, a refused path, or a
failed rewrite or output check.
"""

from __future__ import annotations

import argparse
import os
import sys

import onnx

from rewrite.fuse import fuse_elu_grad, fuse_training, inspect_elu_grad, inspect_training
from rewrite.input_check import ELU_FLOAT32_OPTION, check_input, wrap_elus_in_float32
from rewrite.lower import lower
from rewrite.model_io import ModelError, check_output_paths, load, save, write_text
from rewrite.report import RewriteReport

PROG = "ortops-rewrite"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    fuse = sub.add_parser("fuse", help="replace the ELU backward, softmax cross-entropy and max-pool backward "
                                       "subgraphs by ai.ortops ops")
    fuse.add_argument("input")
    fuse.add_argument("output")
    fuse.add_argument("--strict", action="store_true", help="fuse only bit-exact sites")
    fuse.add_argument("--elu-only", action="store_true", help="only the ELU backward (EluGrad)")
    fuse.add_argument("--report", metavar="FILE.json", help="write the report as JSON")
    fuse.add_argument("--validate", action="store_true", help="compare outputs numerically before writing")
    fuse.add_argument("--inputs", metavar="FILE.npz",
                      help="values of graph inputs for --validate (others: drawn, see the printed notes)")
    fuse.add_argument(ELU_FLOAT32_OPTION, action="store_true",
                      help="compute bfloat16 Elu nodes (invalid ONNX before opset 22) in float32 between Casts")
    lower = sub.add_parser("lower", help="replace the ai.ortops ops by standard ONNX ops")
    lower.add_argument("input")
    lower.add_argument("output")
    lower.add_argument("--report", metavar="FILE.json", help="write the report as JSON")
    inspect = sub.add_parser("inspect", help="list candidate sites and why each would (not) fuse")
    inspect.add_argument("input")
    inspect.add_argument("--strict", action="store_true")
    inspect.add_argument("--elu-only", action="store_true", help="only the ELU backward (EluGrad)")
    return p


class ValidationFailed(Exception):
    pass


def _input_loads(input_path: str, input_model: onnx.ModelProto | None) -> str | None:
    """None if ONNX Runtime loads the input (``input_model``: the input as mended, when it was);
    else the first line of why not."""
    from rewrite.validation import session, session_from_path

    try:
        if input_model is None:
            session_from_path(input_path)
        else:
            session(input_model)
    except Exception as exc:
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return None


def _checker(input_path: str, args, report: RewriteReport, input_model: onnx.ModelProto | None = None):
    """The checks run on the written (temporary) output before it replaces anything."""

    def verify(written: str) -> None:
        try:
            onnx.checker.check_model(written, full_check=True)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ModelError(f"the {args.command}d model fails onnx.checker: {first}") from None
        try:
            from rewrite.validation import session_from_path

            session_from_path(written)
        except ImportError:
            pass  # onnxruntime missing: the checker's verdict stands
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            why = _input_loads(input_path, input_model)
            if why is not None:  # not the rewrite's doing: say so
                raise ModelError(f"ONNX Runtime cannot load the {args.command}d model: {first}; it cannot load the "
                                 f"input model either ({why})") from None
            raise ModelError(f"ONNX Runtime cannot load the {args.command}d model: {first}") from None
        if getattr(args, "validate", False):
            from rewrite.validation import validate

            result = validate(input_path, written, inputs=args.inputs)
            report.validation = result.table()
            if not result.ok:
                raise ValidationFailed("validation failed: the outputs differ beyond the tolerances (table above)")

    return verify


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    report = RewriteReport()
    status, report_path = 0, None
    try:
        model = load(args.input)
        base_dir = os.path.dirname(os.path.abspath(args.input))
        if args.command == "inspect":
            inspect = inspect_elu_grad if args.elu_only else inspect_training
            print(inspect(model, strict=args.strict, base_dir=base_dir).summary())
            return 0
        outputs = [("output", args.output)] + ([("--report", args.report)] if args.report else [])
        check_output_paths(args.input, model, outputs)
        report_path = getattr(args, "report", None)
        # the input's own defects are the input's (not blamed on the rewritten model's check)
        wrap = getattr(args, "elu_in_float32", False)
        problem = check_input(args.input, model)
        if problem is not None and not (wrap and problem.only_elus):
            raise ModelError(problem.message(args.input, wrap))
        if args.command == "fuse":
            fuse = fuse_elu_grad if args.elu_only else fuse_training
            result = fuse(model, strict=args.strict, report=report, base_dir=base_dir)
            if problem is not None:
                result = wrap_elus_in_float32(result)
                names = ", ".join(repr(e[0]) for e in problem.elus)
                report.notes.append(f"{ELU_FLOAT32_OPTION}: Elu node(s) {names} of bfloat16 compute in float32 "
                                    "between Casts")
        else:
            result = lower(model, report=report)
        print(report.summary())
        mended = wrap_elus_in_float32(model) if problem is not None else None
        save(result, args.output, source_dir=base_dir, verify=_checker(args.input, args, report, mended))
    except ValidationFailed as exc:
        print(f"error: {exc}; nothing written", file=sys.stderr)
        status = 1
    except ModelError as exc:
        print(f"error: {exc}" + ("; nothing written" if args.command != "inspect" else ""), file=sys.stderr)
        status = 2
    except Exception as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"error: {args.command} failed: {type(exc).__name__}: {msg}; nothing written", file=sys.stderr)
        status = 2
    if report_path and report.sites:  # asked for, and its path was not refused
        try:
            write_text(report_path, report.to_json())
        except (OSError, ValueError) as exc:
            print(f"error: cannot write the report {report_path}: {exc}", file=sys.stderr)
            status = status or 2
    return status


if __name__ == "__main__":
    sys.exit(main())
