"""The ops of the ``ai.ortops`` domain, one module each (``ort_ops/ops/<op>.py`` defines
``OP``); found by name, so adding an op adds a module and touches no list here.

    from ort_ops.ops import OPS, op
    op("EluGrad").reference(grads, activations, alpha=0.5)
"""

from __future__ import annotations

import importlib
import pkgutil

from ort_ops.ops.definition import Attribute, OpDef, Tensor


def _discover() -> tuple[OpDef, ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name == "definition":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if isinstance(getattr(module, "OP", None), OpDef):
            found.append(module.OP)
    return tuple(found)


OPS: tuple[OpDef, ...] = _discover()
BY_NAME = {o.name: o for o in OPS}
if len(BY_NAME) != len(OPS):
    raise RuntimeError(f"two ort_ops ops share a name: {[o.name for o in OPS]}")


def op(name: str) -> OpDef:
    """The definition of op ``name`` (``KeyError`` naming the known ops otherwise)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no ai.ortops op {name!r} (ops: {', '.join(BY_NAME)})") from None


__all__ = ["Attribute", "BY_NAME", "OPS", "OpDef", "Tensor", "op"]
