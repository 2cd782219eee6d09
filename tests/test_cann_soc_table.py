"""ort_ops/cann_soc_table.json, the one CANN availability table: docs/cann_ops.md shows it as it is,
every placement rule has its kernel's CANN op list there and every list a rule, and the C++ form
the build compiles in is what the table says. (What the simulated devices and the library do with
it: tests/cann/test_soc_matrix.py; the availability written independently from the READMEs:
tests/cann/test_sim_soc.py.)"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ort_ops import cann_soc

REPO = Path(__file__).resolve().parents[1]


def _docs_generator():
    spec = importlib.util.spec_from_file_location("gen_cann_soc_docs", REPO / "scripts" / "gen_cann_soc_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_table_is_current():
    gen = _docs_generator()
    doc = gen.DOC.read_text(encoding="utf-8")
    assert gen.render(doc) == doc, "docs/cann_ops.md is stale: PYTHONPATH=. python scripts/gen_cann_soc_docs.py"


def test_the_docs_table_shows_each_entry():
    doc = (REPO / "docs" / "cann_ops.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2).split(" | ")
            for m in re.finditer(r"^\| `(\w+)` \| ((?:[✓✗] \| ){5}[✓✗]) \|", doc, re.M)}
    assert set(rows) == set(cann_soc.table()["ops"])
    assert rows["EluGrad"] == ["✓", "✓", "✓", "✗", "✓", "✓"]  # 310B: activation/elu_grad/README.md:10
    assert rows["GatherElements"] == ["✓", "✗", "✗", "✗", "✗", "✗"]  # Ascend 950 only


def test_every_placement_rule_has_its_cann_ops_in_the_table_and_back():
    from ort_ops.rewrite.placement.ops import RULES

    assert set(RULES) == set(cann_soc.placed_routes())
    listed = set(cann_soc.table()["ops"])
    for op, routes in cann_soc.placed_routes().items():
        for route, launched in routes.items():
            assert set(launched) <= listed, (op, route, launched)  # the SoC check never relies on the default


def test_a_rule_without_a_table_entry_is_refused():
    from ort_ops.rewrite.placement.rule import PlaceRule

    with pytest.raises(KeyError, match="cann_soc_table.json 'placed' has no entry for it"):
        PlaceRule("NoSuchOnnxOp")
    with pytest.raises(KeyError, match="no route 'nope' for Gemm"):
        cann_soc.placed_launches("Gemm", "nope")


def test_lookups_follow_the_soc_map():
    assert cann_soc.soc_family("Ascend910B") == "ascend910"  # an exact name before the prefix Ascend910B
    assert cann_soc.soc_family("Ascend910B3") == "ascend910b"
    assert cann_soc.soc_family("Ascend910_9391") == "ascend910_93"
    assert cann_soc.soc_family("Ascend999X") is None
    assert cann_soc.unavailable("Ascend999X", "EluGrad") is None
    assert cann_soc.unavailable("Ascend310B1", "EluGrad") == "hicann/ops-nn README"
    assert cann_soc.unavailable("Ascend310P3", "Less") == "hicann/ops-math README"
    assert cann_soc.unavailable("Ascend910B1", "NoSuchOp") is None
    assert cann_soc.source_line("GatherElements", "ascend910b") == \
        "hicann/ops-nn@e5c3fa93:index/gather_elements/README.md:9"
    assert cann_soc.source_line("LogicalNot", "ascend310b") == \
        "hicann/ops-math@c4193324:math/logical_not/docs/aclnnLogicalNot&aclnnInplaceLogicalNot.md:17"


def test_the_cpp_table_says_what_the_json_says():
    """The generator as CMake runs it (its own interpreter, the file path, stdlib only)."""
    text = subprocess.run([sys.executable, "-I", str(REPO / "ort_ops" / "cann_soc.py"), "--cpp"], check=True,
                          capture_output=True, text=True).stdout
    fams = cann_soc.families()
    ops = {m.group(1): int(m.group(2)) for m in re.finditer(r'^CANN_OP\("(\w+)", (\d+)u,', text, re.M)}
    for op in cann_soc.table()["ops"]:
        missing = {f for f in fams if f not in cann_soc.available_on(op)}
        assert {fams[i] for i in range(len(fams)) if ops.get(op, 0) >> i & 1} == missing, op
    routes = {(m.group(1), m.group(2)): re.findall(r'"(\w+)"', m.group(3))
              for m in re.finditer(r'^CANN_PLACED_ROUTE\("(\w+)", "(\w+)", \d+, \{(.*)\}\)$', text, re.M)}
    assert routes == {(op, r): ops_ for op, rs in cann_soc.placed_routes().items() for r, ops_ in rs.items()}
