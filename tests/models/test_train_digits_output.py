"""The digits demo's console output and plot (issue 20, item 8): one summary line per run, no
contradictory plot message, the agreement limit drawn over the verdict's window only."""

import json

import numpy as np
import pytest

from models import train_digits

pytestmark = pytest.mark.python_only  # the demo's output and plot: no op library


def test_summary_line_gives_first_and_last_epoch():
    losses = [4.0, 2.0, 1.0, 0.5, 0.25, 0.75]  # 3 epochs of 2 steps
    line = train_digits.summary_line("ort_cpu", losses, [0.5, 0.75, 0.875], 2)
    assert "loss 3.0000 (epoch 1) -> 0.5000 (epoch 3)" in line
    assert "held-out accuracy 50.00% -> 87.50%" in line


def _result():
    curves = {"torch": [1.0] * 150, "ort_cpu": [1.0] * 150}
    return {"config": {"model": "mlp", "epochs": 1}, "curves": curves, "accuracy": {}}


def test_no_plot_run_says_nothing_about_matplotlib(tmp_path, capsys):
    files = {"curves": str(tmp_path / "curves.json"), "png": str(tmp_path / "loss_curves.png")}
    assert train_digits.finish(_result(), files, [("x", True, 0.0)], 1.0, draw=False) == 0
    out = capsys.readouterr().out
    assert "matplotlib" not in out and f"loss curves -> {files['curves']}" in out
    assert not (tmp_path / "loss_curves.png").exists()
    assert json.loads((tmp_path / "curves.json").read_text())["curves"]["torch"] == [1.0] * 150


def test_the_limit_is_drawn_over_the_verdict_window_only(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    seen = {}
    monkeypatch.setattr(plt, "close", lambda fig: seen.setdefault("fig", fig))
    curves = {"torch": list(np.linspace(2, 1, 300)), "ort_cpu": list(np.linspace(2, 1, 300) * (1 + 1e-5))}
    assert train_digits.plot(curves, str(tmp_path / "p.png"))
    diff = seen["fig"].axes[1]
    limit = [c for c in diff.collections if c.get_label().startswith("limit")]
    assert len(limit) == 1
    (segment,) = limit[0].get_segments()
    assert segment[:, 0].tolist() == [1, train_digits.AGREE_STEPS]
    assert segment[:, 1].tolist() == [train_digits.AGREE_RTOL] * 2
    assert not any(line.get_label().startswith("limit") for line in diff.get_lines())
