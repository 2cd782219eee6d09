"""ortops-rewrite (also python -m ort_ops.rewrite): rewrite ONNX training graphs for the ort-ops op library.

Commands:
  fuse IN OUT     replace the subgraphs the library computes with one op by ai.ortops ops: the ELU
                  backward by EluGrad, the softmax cross-entropy loss and its gradient by
                  SoftmaxCrossEntropyLossAndGrad, the max-pool backward by MaxPoolGrad
                  (rewrite.fuse_training; --elu-only: only EluGrad, rewrite.fuse_elu_grad).
  lower IN OUT    replace every ai.ortops op by standard ONNX ops (rewrite.lower), for runtimes
                  without the op library.
  inspect IN      list the candidate sites and why each would or would not fuse; nothing is written.
fuse and inspect also count the ai.ortops nodes the input already has ("already fused: 2 EluGrad").

The input is checked first (onnx.checker, full_check): its defects are reported as the input's
(--elu-in-float32 mends a bfloat16 Elu, see rewrite.input_check). Nothing is written unless it is
right: the output is checked (onnx.checker with full_check, then loaded in an ONNX Runtime session
with the op library) and, with --validate, compared with the input numerically, all before it
replaces anything; on any failure no output file exists afterwards (--report is still written when
asked). Output paths that are the input, its external data, each other, or not regular files are
refused.

Exit codes: 0 success; 1 validation failed; 2 unreadable or invalid input, a refused path, or a
failed rewrite or output check.
"""

from __future__ import annotations

import argparse
import os
import sys

import onnx

from ort_ops.rewrite.fuse import fuse_elu_grad, fuse_training, inspect_elu_grad, inspect_training
from ort_ops.rewrite.input_check import ELU_FLOAT32_OPTION, check_input, wrap_elus_in_float32
from ort_ops.rewrite.lower import lower
from ort_ops.rewrite.model_io import ModelError, check_output_paths, load, save, write_text
from ort_ops.rewrite.report import RewriteReport

PROG = "ortops-rewrite"


def version() -> str:
    """The installed ort-ops distribution's version (its metadata), else ``ort_ops.__version__``
    (a checkout that is not installed): pyproject.toml reads the version from there."""
    from importlib import metadata

    try:
        return metadata.version("ort-ops")
    except metadata.PackageNotFoundError:
        from ort_ops import __version__

        return __version__


def _parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=raw)
    p.add_argument("--version", action="version", version=f"%(prog)s (ort-ops {version()})",
                   help="print the ort-ops version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="{fuse,lower,inspect}",
                           help="the command (its own --help: ortops-rewrite COMMAND --help)")
    model_in = "the ONNX model to read (its external data, if any, is read from its folder)"
    elu_only = "only the ELU backward rules (EluGrad); default: every rule of fuse_training"
    strict = "fuse only the sites whose result is bit-identical to the original for every input " \
             "(default: also those that differ by rounding, as the report's notes say)"
    report = "also write the report (every site, its outcome and why) as JSON to this file"

    fuse = sub.add_parser(
        "fuse", help="replace the ELU backward, softmax cross-entropy and max-pool backward subgraphs by "
                     "ai.ortops ops",
        description="Replace the ELU backward by ai.ortops EluGrad, the softmax cross-entropy loss and its gradient "
                    "by SoftmaxCrossEntropyLossAndGrad, the max-pool backward by MaxPoolGrad; print one line per "
                    "candidate site (fused or rejected, and why). ai.ortops nodes already in the input are counted "
                    "(\"already fused\") and kept. OUT is written only after it passes onnx.checker, loads in "
                    "ONNX Runtime with the op library and (--validate) matches IN numerically.")
    fuse.add_argument("input", metavar="IN", help=model_in)
    fuse.add_argument("output", metavar="OUT", help="where to write the fused model (not IN; replaced only when "
                                                    "every check passed)")
    fuse.add_argument("--strict", action="store_true", help=strict)
    fuse.add_argument("--elu-only", action="store_true", help=elu_only)
    fuse.add_argument("--report", metavar="FILE.json", help=report)
    fuse.add_argument("--validate", action="store_true",
                      help="run IN and the fused model in ONNX Runtime (and the ONNX reference evaluator) on the "
                           "same inputs and write OUT only if their outputs agree within the tolerances (else exit "
                           "code 1)")
    fuse.add_argument("--inputs", metavar="FILE.npz",
                      help="values of graph inputs for --validate, by input name (others: drawn, see the printed "
                           "notes)")
    fuse.add_argument(ELU_FLOAT32_OPTION, action="store_true",
                      help="compute bfloat16 Elu nodes (invalid ONNX before opset 22) in float32 between Casts")

    lower = sub.add_parser(
        "lower", help="replace the ai.ortops ops by standard ONNX ops",
        description="Replace every ai.ortops op (EluGrad, SoftmaxCrossEntropyLossAndGrad, MaxPoolGrad, the optimizer "
                    "updates) by standard ONNX ops, for runtimes without the op library. OUT is written only after "
                    "it passes onnx.checker and loads in ONNX Runtime.")
    lower.add_argument("input", metavar="IN", help=model_in)
    lower.add_argument("output", metavar="OUT", help="where to write the lowered model (not IN; replaced only when "
                                                     "every check passed)")
    lower.add_argument("--report", metavar="FILE.json", help=report)

    inspect = sub.add_parser(
        "inspect", help="list candidate sites and why each would (not) fuse",
        description="List every candidate site of fuse's rules and whether / why it would fuse, and count the "
                    "ai.ortops nodes IN already has (\"already fused\"). Nothing is written.")
    inspect.add_argument("input", metavar="IN", help=model_in)
    inspect.add_argument("--strict", action="store_true", help=strict.replace("fuse only", "would fuse only"))
    inspect.add_argument("--elu-only", action="store_true", help=elu_only)
    return p


class ValidationFailed(Exception):
    pass


def _input_loads(input_path: str, input_model: onnx.ModelProto | None) -> str | None:
    """None if ONNX Runtime loads the input (``input_model``: the input as mended, when it was);
    else the first line of why not."""
    from ort_ops.rewrite.validation import session, session_from_path

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
            from ort_ops.rewrite.validation import session_from_path

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
            from ort_ops.rewrite.validation import validate

            result = validate(input_path, written, inputs=args.inputs)
            report.validation = result.table()
            if not result.ok:
                raise ValidationFailed("validation failed: the outputs differ beyond the tolerances (table above)")

    return verify


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    report = RewriteReport()
    status, report_path, passed = 0, None, False
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
        passed = True  # the pass ran: its report is worth writing, sites or none
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
    if report_path and (report.sites or passed):  # asked for, its path not refused, the pass ran
        try:
            write_text(report_path, report.to_json())
        except (OSError, ValueError) as exc:
            print(f"error: cannot write the report {report_path}: {exc}", file=sys.stderr)
            status = status or 2
    return status


if __name__ == "__main__":
    sys.exit(main())
