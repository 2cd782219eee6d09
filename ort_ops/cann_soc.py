"""The one CANN availability table (``ort_ops/cann_soc_table.json``): which CANN op types exist on
which Ascend SoC family (with the source that says so), and the CANN ops each placed kernel
launches. The placement pass, the tests and ``scripts/gen_cann_soc_docs.py`` read it here; the
build compiles it into the library (``ort_ops/csrc/cann/soc.cc``) and the ACL simulator
(``cann_ep/sim/src/soc.cc``) through ``python ort_ops/cann_soc.py --cpp`` (stdlib only: CMake runs
it in the build environment, which has no numpy).
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

TABLE_PATH = Path(__file__).with_name("cann_soc_table.json")
ALL = "all"  # "on" of an op type every family has
DEFAULT_ROUTE = "default"
MAX_ROUTE_OPS = 5  # CANN ops one route of a placed kernel may launch (the C++ table's array size)


@functools.cache
def table() -> dict:
    """The parsed table (checked for consistency: unknown families, sources, layouts raise)."""
    with open(TABLE_PATH, encoding="utf-8") as f:
        data = json.load(f)
    _check(data)
    return data


def families() -> list[str]:
    """The families, in the order of the README rows (Ascend 950 first)."""
    return [f["name"] for f in table()["families"]]


def soc_family(soc_name: str) -> str | None:
    """CANN's family of SoC ``soc_name`` ("Ascend910B1" -> "ascend910b"); None for unknown names."""
    names = table()["soc_names"]
    if soc_name in names["exact"]:
        return names["exact"][soc_name]
    for prefix, family in names["prefixes"]:
        if soc_name.startswith(prefix):
            return family
    return None


def available_on(op_type: str) -> list[str]:
    """The families where CANN op ``op_type`` exists (every family for an op type not listed)."""
    entry = table()["ops"].get(op_type)
    return families() if entry is None or entry["on"] == ALL else list(entry["on"])


def unavailable(soc_name: str, op_type: str) -> str | None:
    """Why CANN op ``op_type`` is not available on SoC ``soc_name`` ("hicann/ops-nn README"), or None
    (also for unknown SoCs: everything is assumed available). The library's OrtOpsCannOpUnavailable."""
    family = soc_family(soc_name)
    if family is None or family in available_on(op_type):
        return None
    return f"{table()['sources'][table()['ops'][op_type]['source']]['repo']} README"


def source_line(op_type: str, family: str) -> str:
    """The cited row: "hicann/ops-nn@e5c3fa93:index/gather_elements/README.md:9"."""
    entry = table()["ops"][op_type]
    source = table()["sources"][entry["source"]]
    layout = table()["layouts"][entry["layout"]]
    line = layout["first_line"] + layout["step"] * families().index(family)
    return f"{source['repo']}@{source['commit']}:{entry['path']}:{line}"


def placed_routes() -> dict[str, dict[str, list[str]]]:
    """ONNX op type of a placed kernel -> route -> the CANN op types it launches there."""
    return table()["placed"]


def placed_launches(onnx_op: str, route: str = DEFAULT_ROUTE) -> tuple[str, ...]:
    """The CANN op types placed kernel ``onnx_op`` launches on ``route`` (KeyError naming both if absent)."""
    routes = table()["placed"].get(onnx_op)
    if routes is None or route not in routes:
        have = sorted(routes) if routes is not None else "no entry"
        raise KeyError(f"{TABLE_PATH.name} 'placed': no route {route!r} for {onnx_op} (has: {have})")
    return tuple(routes[route])


def _check(data: dict) -> None:
    names = {f["name"] for f in data["families"]}
    where = TABLE_PATH.name
    for family in [*data["soc_names"]["exact"].values(), *(f for _, f in data["soc_names"]["prefixes"])]:
        if family not in names:
            raise ValueError(f"{where} soc_names: family {family!r} is not one of {sorted(names)}")
    for op, entry in data["ops"].items():
        on = entry["on"]
        if on != ALL and (not isinstance(on, list) or not set(on) <= names):
            raise ValueError(f"{where} ops.{op}: 'on' must be {ALL!r} or a list of {sorted(names)}, got {on!r}")
        if on != ALL and (entry.get("source") not in data["sources"] or entry.get("layout") not in data["layouts"]):
            raise ValueError(f"{where} ops.{op}: an op missing somewhere needs a source in {sorted(data['sources'])}"
                             f" and a layout in {sorted(data['layouts'])}, got {entry}")
    for onnx_op, routes in data["placed"].items():
        for route, ops in routes.items():
            if len(ops) > MAX_ROUTE_OPS:
                raise ValueError(f"{where} placed.{onnx_op}.{route}: {len(ops)} ops, at most {MAX_ROUTE_OPS}")


def _c(text: str) -> str:
    return json.dumps(text)  # a C string literal (ASCII text: the same escapes)


def cpp_table() -> str:
    """The table as C++ macro calls (``cann_soc_table.inc``), which each consumer defines:
    CANN_FAMILY(index, name, product), CANN_OP(type, missing_bits, repo_at_commit, readme_ref,
    path, first_line, step) for every op type missing on some family (bit i: family i),
    CANN_PLACED_ROUTE(onnx_op, route, count, {ops...}); and with CANN_SOC_FAMILY_INDEX defined, a
    function of that name: SoC name (std::string) -> family index, or -1 (CANN's map)."""
    data = table()
    index = {name: i for i, name in enumerate(families())}
    lines = [f"// Generated from ort_ops/{TABLE_PATH.name} by ort_ops/cann_soc.py --cpp (CMake): do not edit.",
             *(f"#ifndef {m}\n#define {m}(...)\n#endif" for m in _MACROS)]
    for i, f in enumerate(data["families"]):
        lines.append(f"CANN_FAMILY({i}, {_c(f['name'])}, {_c(f['product'])})")
    lines += ["#ifdef CANN_SOC_FAMILY_INDEX", "// The family index of SoC `soc` (exact names, then prefixes), or -1.",
              "int CANN_SOC_FAMILY_INDEX(const std::string& soc) {"]
    lines += [f"  if (soc == {_c(name)}) return {index[f]};" for name, f in data["soc_names"]["exact"].items()]
    lines += [f"  if (soc.rfind({_c(prefix)}, 0) == 0) return {index[f]};"
              for prefix, f in data["soc_names"]["prefixes"]]
    lines += ["  return -1;", "}", "#endif"]
    for op, entry in data["ops"].items():
        if entry["on"] == ALL:
            continue
        missing = sum(1 << index[f] for f in families() if f not in entry["on"])
        if missing == 0:
            continue
        source, layout = data["sources"][entry["source"]], data["layouts"][entry["layout"]]
        lines.append(f"CANN_OP({_c(op)}, {missing}u, {_c(source['repo'] + '@' + source['commit'])}, "
                     f"{_c(source['repo'] + ' README')}, {_c(entry['path'])}, {layout['first_line']}, "
                     f"{layout['step']})")
    for onnx_op, routes in data["placed"].items():
        for route, ops in routes.items():
            lines.append(f"CANN_PLACED_ROUTE({_c(onnx_op)}, {_c(route)}, {len(ops)}, "
                         f"{{{', '.join(_c(o) for o in ops)}}})")
    lines += [f"#undef {m}" for m in (*_MACROS, "CANN_SOC_FAMILY_INDEX")]
    return "\n".join(lines) + "\n"


_MACROS = ("CANN_FAMILY", "CANN_OP", "CANN_PLACED_ROUTE")


def docs_table() -> str:
    """The availability tables of docs/cann_ops.md (Markdown): per family the op types it lacks, and
    one row per op type listed (✓ / ✗ per family, the source)."""
    data = table()
    fams = families()
    socs: dict[str, list[str]] = {f: [] for f in fams}
    for name, family in data["soc_names"]["exact"].items():
        socs[family].append(f"`{name}`")
    for prefix, family in data["soc_names"]["prefixes"]:
        socs[family].append(f"`{prefix}*`")
    rows = ["| Family (SoC names) | Lacks |", "| --- | --- |"]
    for f in fams:
        lacks = [op for op in sorted(data["ops"]) if f not in available_on(op)]
        rows.append(f"| `{f}` ({', '.join(socs[f])}) | {', '.join(lacks) or 'nothing'} |")
    rows.append("")
    head = "| CANN op type | " + " | ".join(f"`{f}`" for f in fams) + " | Source |"
    rows += [head, "|" + " --- |" * (len(fams) + 2)]
    for op in sorted(data["ops"]):
        entry = data["ops"][op]
        on = available_on(op)
        marks = " | ".join("✓" if f in on else "✗" for f in fams)
        if entry["on"] == ALL:
            source = entry.get("note", "no product table")
        else:
            first = next((f for f in fams if f not in on), fams[0])
            row = source_line(op, first).rsplit(":", 1)[0]
            source = f"`{row}` ({entry['layout'].replace('_', ' ')} product table)"
        rows.append(f"| `{op}` | {marks} | {source} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] != ["--cpp"]:
        sys.exit(f"usage: python {sys.argv[0]} --cpp   (prints the C++ table; the docs: scripts/gen_cann_soc_docs.py)")
    sys.stdout.write(cpp_table())
