"""Each ``ai.ortops`` op in standard ONNX ops: one module per op (``OP``, the op name, and
``nodes(base, inputs, outputs, attrs, dtype)``, the replacement nodes), found by name: adding an
op's lowering adds a module here and touches no list; ``_nodes`` holds what they share."""

from __future__ import annotations

import importlib
import pkgutil


def _discover() -> dict:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):  # what the lowerings share (_nodes)
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found[module.OP] = module
    return found


LOWERINGS = _discover()
