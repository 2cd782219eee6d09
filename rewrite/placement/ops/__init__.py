"""The placement rules, one module per op family (``RULES``, a tuple of
:class:`~ort_ops.rewrite.placement.rule.PlaceRule`), found by name: adding a family adds a module."""

from __future__ import annotations

import importlib
import pkgutil

from ort_ops.rewrite.placement.rule import PlaceRule


def _discover() -> dict[str, PlaceRule]:
    found: dict[str, PlaceRule] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for rule in module.RULES:
            if rule.op_type in found:
                raise RuntimeError(f"two placement rules for {rule.op_type}")
            found[rule.op_type] = rule
    return found


RULES: dict[str, PlaceRule] = _discover()
