"""The CLI explains itself (every command and argument has help, --version) and reports the
ai.ortops nodes a model already has."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import onnx
import pytest
import tomllib
from onnx import TensorProto as TP
from onnx import helper

from graphs import mlp
from ort_ops import rewrite
from ort_ops.domain import DOMAIN, IR_VERSION, ONNX_OPSET, OPSET_VERSION
from ort_ops.rewrite import cli

ROOT = Path(__file__).resolve().parents[2]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_command_and_argument_has_help():
    parser = cli._parser()
    commands = _subparsers(parser)
    assert sorted(commands) == ["fuse", "inspect", "lower"]
    (sub_action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert sorted(a.dest for a in sub_action._choices_actions if a.help) == ["fuse", "inspect", "lower"]
    for name, sub in commands.items():
        assert sub.description, f"{name} has no description"
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_top_level_help_is_complete(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    # the whole description, not its first line: every command and the exit codes
    for text in ("fuse IN OUT", "lower IN OUT", "inspect IN", "already fused", "Exit codes: 0 success",
                 "failed rewrite or output check.", "--version"):
        assert text in out, text


@pytest.mark.parametrize("command, arguments", [
    ("fuse", ["IN", "OUT", "--strict", "--elu-only", "--report", "--validate", "--inputs", "--elu-in-float32"]),
    ("lower", ["IN", "OUT", "--report"]),
    ("inspect", ["IN", "--strict", "--elu-only"]),
])
def test_command_help_explains_each_argument(capsys, command, arguments):
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for arg in arguments:
        # the argument's own line in the help carries text after the name
        line = re.search(rf"^  {re.escape(arg)}\b[^\n]*(\n {{10,}}\S[^\n]*)?", out, re.M)
        assert line and len(line.group(0).split()) > 2, f"{command} {arg}: no help in\n{out}"


def test_version_is_the_distributions_and_defined_once():
    r = subprocess.run([sys.executable, "-m", "ort_ops.rewrite", "--version"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    import ort_ops

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # one definition: pyproject takes it from ort_ops.__version__ (scikit-build-core's regex provider)
    assert "version" not in project and "version" in project["dynamic"]
    installed = metadata.version("ort-ops")
    assert r.stdout.strip() == f"ortops-rewrite (ort-ops {installed})"
    assert installed == ort_ops.__version__


def test_version_falls_back_to_the_package_when_not_installed(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    import ort_ops

    assert cli.version() == ort_ops.__version__


def _elu_grad(dy: str, y: str, out: str, name: str) -> onnx.NodeProto:
    return helper.make_node("EluGrad", [dy, y], [out], name=name, domain=DOMAIN, alpha=1.0)


def _already_fused_model() -> onnx.ModelProto:
    """2 EluGrad and a SoftmaxCrossEntropyLossAndGrad in the main graph, 1 EluGrad inside an If
    branch: 3 EluGrad, 1 SoftmaxCrossEntropyLossAndGrad."""
    f = TP.FLOAT
    branch = helper.make_graph([_elu_grad("dy", "y", "b", "in_branch")], "then",
                               [], [helper.make_tensor_value_info("b", f, [2, 3])])
    other = helper.make_graph([helper.make_node("Identity", ["dy"], ["c"])], "else",
                              [], [helper.make_tensor_value_info("c", f, [2, 3])])
    nodes = [
        _elu_grad("dy", "y", "g1", "first"),
        _elu_grad("g1", "y", "g2", "second"),
        helper.make_node("SoftmaxCrossEntropyLossAndGrad", ["logits", "target", "dloss"], ["loss", "dlogits"],
                         name="loss", domain=DOMAIN),
        helper.make_node("If", ["cond"], ["branch_out"], then_branch=branch, else_branch=other),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, f, [2, 3]) for n in ("dy", "y", "logits")]
        + [helper.make_tensor_value_info("target", TP.INT64, [2]), helper.make_tensor_value_info("dloss", f, []),
           helper.make_tensor_value_info("cond", TP.BOOL, [])],
        [helper.make_tensor_value_info(n, f, s) for n, s in
         (("g2", [2, 3]), ("loss", []), ("dlogits", [2, 3]), ("branch_out", [2, 3]))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                                                   helper.make_opsetid(DOMAIN, OPSET_VERSION)])
    model.ir_version = IR_VERSION
    return model


def test_inspect_reports_the_ai_ortops_nodes_already_there(tmp_path, capsys):
    path = tmp_path / "fused.onnx"
    onnx.save(_already_fused_model(), path)
    assert cli.main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "0 site(s) would be rewritten" in out
    assert "already fused: 3 EluGrad, 1 SoftmaxCrossEntropyLossAndGrad" in out
    assert cli.main(["inspect", "--elu-only", str(path)]) == 0
    assert "already fused: 3 EluGrad, 1 SoftmaxCrossEntropyLossAndGrad" in capsys.readouterr().out


def test_inspect_of_a_model_without_ai_ortops_nodes_says_nothing_of_them(tmp_path, capsys):
    path = tmp_path / "in.onnx"
    onnx.save(mlp(), path)
    assert cli.main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "would fuse" in out and "already fused" not in out


def test_fuse_of_a_fused_model_reports_and_keeps_its_nodes(tmp_path, capsys):
    src, once, twice, rep = (tmp_path / n for n in ("in.onnx", "once.onnx", "twice.onnx", "r.json"))
    onnx.save(mlp(), src)
    # the mlp has one ELU: its backward becomes one EluGrad
    assert cli.main(["fuse", str(src), str(once)]) == 0
    assert "already fused" not in capsys.readouterr().out
    assert cli.main(["fuse", str(once), str(twice), "--report", str(rep)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fuse: 0 site(s) rewritten") and "already fused: 1 EluGrad" in out
    fused = onnx.load(twice)
    assert [n.op_type for n in fused.graph.node if n.domain == DOMAIN] == ["EluGrad"]
    # the report is written though no site was found: it says what the model already had
    written = json.loads(rep.read_text())
    assert written["sites"] == [] and written["already_fused"] == {"EluGrad": 1}


def test_the_passes_count_nodes_of_functions_once_and_write_them_to_json():
    model = _already_fused_model()
    body = [_elu_grad("fdy", "fy", "fout", "in_function")]
    model.functions.append(helper.make_function("local", "F", ["fdy", "fy"], ["fout"], body,
                                                [helper.make_opsetid(DOMAIN, OPSET_VERSION)]))
    model.opset_import.append(helper.make_opsetid("local", 1))
    model.graph.node.append(helper.make_node("F", ["dy", "y"], ["f1"], domain="local"))
    model.graph.node.append(helper.make_node("F", ["dy", "y"], ["f2"], domain="local"))
    expected = {"EluGrad": 4, "SoftmaxCrossEntropyLossAndGrad": 1}  # 2 + 1 in the If branch + 1 in F (called twice)
    assert rewrite.inspect_training(model).already_fused == expected
    report = rewrite.RewriteReport()
    rewrite.fuse_elu_grad(model, report=report)
    assert report.already_fused == expected
    assert json.loads(report.to_json())["already_fused"] == expected
