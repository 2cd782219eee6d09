"""Generates the C++ declaration of every op of ``ort_ops/ops/`` from its ``OP = OpDef(...)``.

Run by CMake at build time (CMakeLists.txt, "op declarations"); the output goes to the build
directory, never the source tree:

* ``declared/<module>.h`` per op: ``ortops::<module>::Declaration`` with the op's name, input and
  output names, the attribute struct with the declared defaults, ``ReadAttributes`` (the
  undeclared-attribute check with the declared and ``foreign_attributes`` names, then every
  attribute read with its default), the element types of ``T`` and every input's and output's
  ``IoSpec`` (fixed dtypes, optional, host memory) per variant;
* ``op_list.inc``: one ``ORTOPS_OP_KERNELS(<module>, Cpu|Cann)`` line per op and provider of its
  ``providers`` (CANN lines only with ``--with-cann``), the order in which they register;
* ``op_includes.inc``: the generated headers (for ``OrtOpsDeclarations()`` in register_ops.cc);
* ``op_declarations.inc``: one ``ORTOPS_DECLARED_OP(<module>)`` line per op.

It reads the op modules with :mod:`ast` and imports nothing of the project (the build's Python
may have neither NumPy nor onnx): the fields it needs (``name``, ``inputs``, ``outputs``,
``attributes``, ``dtypes``, ``providers``, ``foreign_attributes``) must be literals, or names
bound to literals in the module or imported from another module of ``ort_ops``, or ``list(...)``
/ ``tuple(...)`` / ``float(...)`` / ``int(...)`` of those. Anything else, and any field that does
not fit the C++ side, stops the build with an error naming the file, the op and the field.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys

CPU = "CPUExecutionProvider"
CANN = "CANNExecutionProvider"
PROVIDERS = {CPU: "Cpu", CANN: "Cann"}
# attribute kind -> (C++ type, reader in common/tensor_io.h, Python types of a default)
KINDS = {
    "float": ("float", "ReadFloatAttribute", (float, int)),
    "int": ("int64_t", "ReadIntAttribute", (int,)),
    "string": ("std::string", "ReadStringAttribute", (str,)),
    "ints": ("std::vector<int64_t>", "ReadIntsAttribute", (list, tuple)),
    "floats": ("std::vector<float>", "ReadFloatsAttribute", (list, tuple)),
}
GENERATED_FIELDS = ("name", "inputs", "outputs", "attributes", "dtypes", "providers", "foreign_attributes")


class DeclarationError(Exception):
    """A declaration the generator cannot turn into C++: the message names file, op and field."""


class _Record(dict):
    """A ``Tensor(...)`` / ``Attribute(...)`` call, its arguments by field name."""

    def __init__(self, kind, values):
        super().__init__(values)
        self.kind = kind


class Module:
    """One Python module of ort_ops, evaluated lazily name by name."""

    def __init__(self, root: str, dotted: str, path: str):
        self.root, self.dotted, self.path = root, dotted, path
        with open(path, encoding="utf-8") as f:
            self.tree = ast.parse(f.read(), filename=path)
        self.bindings: dict[str, ast.AST] = {}
        self.imports: dict[str, tuple[str, str]] = {}
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.bindings[node.targets[0].id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                self.bindings[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (node.module, alias.name)
        self.cache: dict[str, object] = {}

    def where(self, node: ast.AST | None = None) -> str:
        rel = os.path.relpath(self.path, self.root)
        return f"{rel}:{node.lineno}" if node is not None and hasattr(node, "lineno") else rel


class Evaluator:
    """Evaluates the restricted expressions a declaration may use (module docstring)."""

    def __init__(self, root: str):
        self.root = root
        self.modules: dict[str, Module] = {}

    def module(self, dotted: str) -> Module:
        if dotted not in self.modules:
            path = os.path.join(self.root, *dotted.split(".")) + ".py"
            if not os.path.isfile(path):
                raise KeyError(dotted)
            self.modules[dotted] = Module(self.root, dotted, path)
        return self.modules[dotted]

    def name(self, module: Module, name: str, node: ast.AST):
        if name in module.cache:
            return module.cache[name]
        if name in module.bindings:
            value = self.eval(module, module.bindings[name])
        elif name in module.imports and module.imports[name][0].split(".")[0] == "ort_ops":
            source, original = module.imports[name]
            try:
                other = self.module(source)
            except KeyError:
                raise DeclarationError(f"{module.where(node)}: {name} comes from {source}, not a module file") from None
            value = self.name(other, original, node)
        else:
            raise DeclarationError(f"{module.where(node)}: {name} is not a constant of the module or of ort_ops")
        module.cache[name] = value
        return value

    def eval(self, module: Module, node: ast.AST):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self.eval(module, e) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Dict):
            return {self.eval(module, k): self.eval(module, v) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.eval(module, node.operand)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.eval(module, node.left) + self.eval(module, node.right)
        if isinstance(node, ast.Name):
            return self.name(module, node.id, node)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            # TensorProto.FLOAT and the like: kept as the attribute's name
            return ("attribute", node.value.id, node.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            func = node.func.id
            if func in ("list", "tuple", "float", "int", "str") and len(node.args) == 1 and not node.keywords:
                value = self.eval(module, node.args[0])
                return {"list": list, "tuple": tuple, "float": float, "int": int, "str": str}[func](value)
            if func in ("Tensor", "Attribute"):
                return self.record(module, func, node)
        text = ast.unparse(node) if hasattr(ast, "unparse") else type(node).__name__
        raise DeclarationError(f"{module.where(node)}: cannot evaluate {text!r} at build time (a literal, a "
                               "module constant, or list/tuple/float/int of one)")

    def record(self, module: Module, kind: str, node: ast.Call) -> _Record:
        fields = self.dataclass_fields(kind)
        values = {}
        for i, arg in enumerate(node.args):
            if i >= len(fields):
                raise DeclarationError(f"{module.where(node)}: {kind}(...) takes {len(fields)} arguments")
            values[fields[i][0]] = arg
        for kw in node.keywords:
            values[kw.arg] = kw.value
        out = {}
        for field, default in fields:
            if field == "doc":
                continue
            if field in values:
                out[field] = self.eval(module, values[field])
            elif default is not None:
                out[field] = default
            else:
                raise DeclarationError(f"{module.where(node)}: {kind}(...) has no {field}")
        return _Record(kind, out)

    def dataclass_fields(self, cls: str) -> list[tuple[str, object]]:
        """(field, default or None) of dataclass ``cls`` of ort_ops/ops/definition.py, in order."""
        definition = self.module("ort_ops.ops.definition")
        for node in definition.tree.body:
            if isinstance(node, ast.ClassDef) and node.name == cls:
                fields = []
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        default = None
                        if item.value is not None:
                            value = item.value
                            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
                                value = next((k.value for k in value.keywords if k.arg == "default"), None)
                            if value is not None:
                                try:
                                    default = self.eval(definition, value)
                                except DeclarationError:
                                    default = None  # a field the generator does not read
                        fields.append((item.target.id, default))
                return fields
        raise DeclarationError(f"ort_ops/ops/definition.py has no class {cls}")


def onnx_types(evaluator: Evaluator) -> dict[str, str]:
    """dtype name -> ONNX element type name (FLOAT, INT64, ...), from ort_ops/dtypes.py's TYPES."""
    module = evaluator.module("ort_ops.dtypes")
    node = module.bindings.get("TYPES")
    if not isinstance(node, ast.Dict):
        raise DeclarationError("ort_ops/dtypes.py: TYPES is not a dict literal")
    out = {}
    for key, value in zip(node.keys, node.values):
        code = value.elts[1] if isinstance(value, ast.Tuple) and len(value.elts) == 2 else None
        if not (isinstance(key, ast.Constant) and isinstance(code, ast.Attribute)):
            raise DeclarationError(f"{module.where(value)}: TYPES entries must be 'name': (dtype, TensorProto.X)")
        out[key.value] = code.attr
    return out


def find_opdef(module: Module) -> ast.Call | None:
    node = module.bindings.get("OP")
    if node is None:
        return None
    if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "OpDef"):
        raise DeclarationError(f"{module.where(node)}: OP must be an OpDef(...) call")
    return node


class Op:
    """The fields of one OpDef the C++ side needs, checked."""

    def __init__(self, evaluator: Evaluator, module: Module, call: ast.Call, types: dict[str, str]):
        self.module = module.dotted.rsplit(".", 1)[1]
        self.source = os.path.relpath(module.path, evaluator.root)
        if call.args:
            raise DeclarationError(f"{module.where(call)}: OpDef(...) takes keyword arguments only")
        given = {kw.arg: kw.value for kw in call.keywords}
        defaults = dict(evaluator.dataclass_fields("OpDef"))
        name_node = given.get("name")
        self.name = evaluator.eval(module, name_node) if name_node is not None else None
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise DeclarationError(f"{module.where(call)}: op in {self.source}: field 'name' must be an identifier "
                                   f"string, got {self.name!r}")
        values = {}
        for field in GENERATED_FIELDS[1:]:
            node = given.get(field)
            try:
                values[field] = evaluator.eval(module, node) if node is not None else defaults.get(field)
            except DeclarationError as e:
                raise DeclarationError(f"{e} [op {self.name}, field '{field}']") from None
            if values[field] is None:
                raise DeclarationError(f"{module.where(call)}: op {self.name}: field '{field}' is missing")
        self.where = module.where(call)
        self.inputs = self._tensors(values["inputs"], "inputs", types)
        self.outputs = self._tensors(values["outputs"], "outputs", types)
        for t in self.outputs:
            if t["host"]:
                raise DeclarationError(self._error("outputs", f"{t['name']}: host memory is for inputs only"))
        self.attributes = self._attributes(values["attributes"])
        self.dtypes = self._strings(values["dtypes"], "dtypes")
        for d in self.dtypes:
            if d not in types:
                raise DeclarationError(self._error("dtypes", f"{d!r} is not a dtype of ort_ops/dtypes.py TYPES"))
        if not self.dtypes:
            raise DeclarationError(self._error("dtypes", "is empty"))
        self.types = types
        self.providers = self._strings(values["providers"], "providers")
        for p in self.providers:
            if p not in PROVIDERS:
                raise DeclarationError(self._error("providers", f"{p!r} is not one of {', '.join(PROVIDERS)}"))
        self.foreign = self._strings(values["foreign_attributes"], "foreign_attributes")

    def _error(self, field: str, what: str) -> str:
        return f"{self.where}: op {self.name}: field '{field}': {what}"

    def _strings(self, value, field: str) -> tuple[str, ...]:
        if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
            raise DeclarationError(self._error(field, f"must be a tuple of strings, got {value!r}"))
        return tuple(value)

    def _tensors(self, value, field: str, types: dict[str, str]) -> list[dict]:
        if not isinstance(value, (tuple, list)):
            raise DeclarationError(self._error(field, f"must be a tuple of Tensor(...), got {value!r}"))
        seen = set()
        for i, t in enumerate(value):
            if not (isinstance(t, _Record) and t.kind == "Tensor"):
                raise DeclarationError(self._error(f"{field}[{i}]", f"must be a Tensor(...), got {t!r}"))
            if not isinstance(t["name"], str) or not t["name"].isidentifier() or t["name"] in seen:
                raise DeclarationError(self._error(f"{field}[{i}].name", f"{t['name']!r} is not a unique identifier"))
            seen.add(t["name"])
            if t["type"] != "T" and t["type"] not in types:
                raise DeclarationError(self._error(f"{field}[{i}] ({t['name']}).type",
                                                   f"{t['type']!r} is neither 'T' nor a dtype of ort_ops/dtypes.py"))
            for flag in ("optional", "host"):
                if not isinstance(t[flag], bool):
                    raise DeclarationError(self._error(f"{field}[{i}] ({t['name']}).{flag}", "must be True or False"))
        return list(value)

    def _attributes(self, value) -> list[dict]:
        if not isinstance(value, (tuple, list)):
            raise DeclarationError(self._error("attributes", f"must be a tuple of Attribute(...), got {value!r}"))
        seen = set()
        for i, a in enumerate(value):
            if not (isinstance(a, _Record) and a.kind == "Attribute"):
                raise DeclarationError(self._error(f"attributes[{i}]", f"must be an Attribute(...), got {a!r}"))
            label = f"attributes[{i}] ({a['name']})"
            if not isinstance(a["name"], str) or not a["name"].isidentifier() or a["name"] in seen:
                raise DeclarationError(self._error(f"attributes[{i}].name",
                                                   f"{a['name']!r} is not a unique identifier"))
            seen.add(a["name"])
            if a["kind"] not in KINDS:
                raise DeclarationError(self._error(f"{label}.kind", f"{a['kind']!r} is not one of {', '.join(KINDS)}"))
            allowed = KINDS[a["kind"]][2]
            default = a["default"]
            ok = isinstance(default, allowed) and not isinstance(default, bool)
            if ok and a["kind"] in ("ints", "floats"):
                element = int if a["kind"] == "ints" else (int, float)
                ok = all(isinstance(v, element) and not isinstance(v, bool) for v in default)
            if not ok:
                raise DeclarationError(self._error(f"{label}.default",
                                                   f"{default!r} is not a value of kind {a['kind']!r}"))
        return list(value)


def cpp_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def cpp_float(value) -> str:
    text = repr(float(value))
    if text in ("inf", "-inf", "nan"):
        raise ValueError(text)
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def cpp_value(kind: str, value) -> str:
    if kind == "float":
        return cpp_float(value)
    if kind == "int":
        return f"int64_t{{{int(value)}}}"
    if kind == "string":
        return cpp_string(value)
    if kind == "ints":
        return "{" + ", ".join(str(int(v)) for v in value) + "}"
    return "{" + ", ".join(cpp_float(v) for v in value) + "}"


def io_specs(op: Op, tensors: list[dict]) -> str:
    specs = []
    for t in tensors:
        etype = "t" if t["type"] == "T" else f"ONNX_TENSOR_ELEMENT_DATA_TYPE_{op.types[t['type']]}"
        specs.append(f"IoSpec{{{etype}, {str(t['optional']).lower()}, {str(t['host']).lower()}}}")
    return ", ".join(specs)


def names(values) -> str:
    return ", ".join(cpp_string(v) for v in values)


def header(op: Op) -> str:
    uses_t = any(t["type"] == "T" for t in (*op.inputs, *op.outputs))
    lines = [
        f"// Generated by scripts/gen_op_declarations.py from {op.source} (OP = OpDef(...)) at build time: do not",
        "// edit; change the declaration. common/op_declaration.h says how kernels use it.",
        "#pragma once",
        "",
        "#include <cstdint>",
        "#include <string>",
        "#include <vector>",
        "",
        '#include "common/op_declaration.h"',
        "",
        f"namespace ortops::{op.module} {{",
        "",
        "struct Declaration {",
        f"  static constexpr const char* kName = {cpp_string(op.name)};",
        f"  static constexpr const char* kSource = {cpp_string(op.source)};",
        f"  static constexpr size_t kInputs = {len(op.inputs)};",
        f"  static constexpr size_t kOutputs = {len(op.outputs)};",
        "  static const std::vector<const char*>& InputNames() {",
        f"    static const std::vector<const char*> names{{{names(t['name'] for t in op.inputs)}}};",
        "    return names;",
        "  }",
        "  static const std::vector<const char*>& OutputNames() {",
        f"    static const std::vector<const char*> names{{{names(t['name'] for t in op.outputs)}}};",
        "    return names;",
        "  }",
        "",
        "  // The attributes as declared (kind and default); an op's own checks and derived values",
        "  // live in its header.",
        "  struct Attributes {",
    ]
    for a in op.attributes:
        lines.append(f"    {KINDS[a['kind']][0]} {a['name']} = {cpp_value(a['kind'], a['default'])};")
    lines += [
        "  };",
        "  // Rejects the probed undeclared attributes (common/attribute_check.h), then reads each",
        "  // declared one, its default when absent: errors name the op and the attribute.",
        "  static OrtStatusPtr ReadAttributes(const OrtKernelInfo* info, Attributes* a) {",
        "    ORTOPS_RETURN_IF_ERROR(RejectUndeclaredAttributes(",
        f"        info, kName, {{{names(a['name'] for a in op.attributes)}}}, {{{names(op.foreign)}}}));",
    ]
    for a in op.attributes:
        reader = KINDS[a["kind"]][1]
        lines.append(f"    ORTOPS_RETURN_IF_ERROR({reader}(info, kName, {cpp_string(a['name'])}, "
                     f"{cpp_value(a['kind'], a['default'])}, &a->{a['name']}));")
    lines += [
        "    (void)info;",
        "    (void)a;",
        "    return nullptr;",
        "  }",
        "  // \"name:kind=default\" of every attribute, for OrtOpsDeclarations().",
        "  static std::string AttributesText() {",
        "    const Attributes d{};",
        "    std::string text;",
    ]
    for i, a in enumerate(op.attributes):
        sep = "" if i == 0 else ","
        lines.append(f"    text += \"{sep}{a['name']}:{a['kind']}=\" + DeclaredValueText(d.{a['name']});")
    lines += [
        "    (void)d;",
        "    return text;",
        "  }",
        "",
        "  // One kernel per element type of T (the OpDef's dtypes), per provider of `providers`.",
        "  using Types = TypeCodes<" + ", ".join(f"ONNX_TENSOR_ELEMENT_DATA_TYPE_{op.types[d]}" for d in op.dtypes)
        + ">;",
        f"  static constexpr bool kOnCpu = {str(CPU in op.providers).lower()};",
        f"  static constexpr bool kOnCann = {str(CANN in op.providers).lower()};",
        "  // Every input's and output's element type, optionality and memory when T is `t`.",
        f"  static std::vector<IoSpec> InputSpecs(ONNXTensorElementDataType {'t' if uses_t else ''}) {{",
        f"    return {{{io_specs(op, op.inputs)}}};",
        "  }",
        f"  static std::vector<IoSpec> OutputSpecs(ONNXTensorElementDataType {'t' if uses_t else ''}) {{",
        f"    return {{{io_specs(op, op.outputs)}}};",
        "  }",
        "};",
        "",
        f"}}  // namespace ortops::{op.module}",
        "",
    ]
    return "\n".join(lines)


def write_if_changed(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` through a temporary file and a rename (nothing half-written);
    leaves an unchanged file alone, so what includes it is not rebuilt."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def generate(root: str, out: str, with_cann: bool) -> list[Op]:
    evaluator = Evaluator(root)
    types = onnx_types(evaluator)
    ops_dir = os.path.join(root, "ort_ops", "ops")
    csrc = os.path.join(root, "ort_ops", "csrc", "ops")
    ops = []
    for file in sorted(os.listdir(ops_dir)):
        stem, ext = os.path.splitext(file)
        if ext != ".py" or stem in ("__init__", "definition"):
            continue
        module = evaluator.module(f"ort_ops.ops.{stem}")
        call = find_opdef(module)
        if call is not None:
            ops.append(Op(evaluator, module, call, types))
    declared = {op.module for op in ops}
    folders = {d for d in os.listdir(csrc) if os.path.isdir(os.path.join(csrc, d))}
    for folder in sorted(folders - declared):
        raise DeclarationError(f"ort_ops/csrc/ops/{folder}/ has kernels but ort_ops/ops/{folder}.py declares no OP")
    by_name = {}
    for op in ops:
        if op.name in by_name:
            raise DeclarationError(f"{op.where}: op {op.name}: field 'name': also declared in {by_name[op.name]}")
        by_name[op.name] = op.source
        files = os.listdir(os.path.join(csrc, op.module)) if op.module in folders else []
        for provider, prefix in ((CPU, "cpu_"), (CANN, "cann_")):
            has = any(f.startswith(prefix) and f.endswith(".cc") for f in files)
            if (provider in op.providers) != has:
                state = "declares" if provider in op.providers else "does not declare"
                raise DeclarationError(
                    f"{op.where}: op {op.name}: field 'providers' {state} {provider}, but ort_ops/csrc/ops/"
                    f"{op.module}/ has {'a' if has else 'no'} {prefix}*.cc kernel file")
    for op in ops:
        write_if_changed(os.path.join(out, "declared", f"{op.module}.h"), header(op))
    kernels = "".join(f"ORTOPS_OP_KERNELS({op.module}, {PROVIDERS[p]})\n" for op in ops for p in (CPU, CANN)
                      if p in op.providers and (p == CPU or with_cann))
    note = "// generated by scripts/gen_op_declarations.py from ort_ops/ops/\n"
    write_if_changed(os.path.join(out, "op_list.inc"), note + kernels)
    write_if_changed(os.path.join(out, "op_includes.inc"),
                     note + "".join(f'#include "declared/{op.module}.h"\n' for op in ops))
    write_if_changed(os.path.join(out, "op_declarations.inc"),
                     note + "".join(f"ORTOPS_DECLARED_OP({op.module})\n" for op in ops))
    return ops


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", required=True, help="the source tree (holds ort_ops/)")
    parser.add_argument("--out", required=True, help="the build's generated-files directory")
    parser.add_argument("--with-cann", choices=("ON", "OFF"), default="ON")
    parser.add_argument("--stamp", help="a file written after every successful run (the build rule's output)")
    args = parser.parse_args(argv)
    try:
        generate(os.path.abspath(args.root), args.out, args.with_cann == "ON")
    except DeclarationError as e:
        print(f"error: op declaration: {e}", file=sys.stderr)
        return 1
    if args.stamp:
        with open(args.stamp, "w", encoding="utf-8") as f:
            f.write("generated by scripts/gen_op_declarations.py\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
