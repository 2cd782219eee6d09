"""The rule order in rewrite/rules/__init__.py is the one list of rules: every module of the
package that exports a ``RULE`` is named in it exactly once, and nothing else is."""

import importlib
import pkgutil

from ort_ops.rewrite import rules


def _modules_with_rule() -> set[str]:
    found = set()
    for info in pkgutil.iter_modules(rules.__path__):
        module = importlib.import_module(f"{rules.__name__}.{info.name}")
        if hasattr(module, "RULE"):
            found.add(info.name)
    return found


def test_every_rule_module_is_in_the_order_once():
    order = rules.ELU_RULE_MODULES + rules.TRAINING_RULE_MODULES
    duplicated = sorted({name for name in order if order.count(name) > 1})
    assert not duplicated, f"rule modules listed twice in the rule order: {duplicated}"
    missing = sorted(_modules_with_rule() - set(order))
    assert not missing, f"rule modules with a RULE not in the rule order: {missing}"
    assert set(order) <= _modules_with_rule(), f"rule order names modules without a RULE: {order}"


def test_rule_tuples_follow_the_module_order():
    assert rules.RULES == tuple(importlib.import_module(f"{rules.__name__}.{m}").RULE
                                for m in rules.ELU_RULE_MODULES)
    assert rules.TRAINING_RULES[: len(rules.RULES)] == rules.RULES
    assert [r.name for r in rules.TRAINING_RULES[len(rules.RULES):]] == [
        importlib.import_module(f"{rules.__name__}.{m}").RULE.name for m in rules.TRAINING_RULE_MODULES
    ]
