"""The README's code blocks, each with the marker before it that says where it runs:
``<!-- readme-test: run in .venv -->``, ``run in .venv-cann`` or ``skip (why)``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"(?:<!--\s*readme-test:\s*(?P<marker>[^>]*?)\s*-->\s*\n)?```(?P<lang>\w*)\n(?P<code>.*?)```",
                    re.S)


@dataclass
class Snippet:
    index: int
    lang: str
    code: str
    marker: str  # "" when the block has no marker

    @property
    def venv(self) -> str | None:
        m = re.match(r"run in (\.venv(?:-cann)?)\b", self.marker)
        return m.group(1) if m else None


def snippets(path: Path = ROOT / "README.md") -> list[Snippet]:
    text = path.read_text(encoding="utf-8")
    return [Snippet(i, m.group("lang"), m.group("code"), (m.group("marker") or "").strip())
            for i, m in enumerate(_BLOCK.finditer(text))]


def run(snippet: Snippet, cwd: Path, python: str = sys.executable, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run one snippet in ``cwd`` (python: with ``python``; bash: with its venv's bin first on PATH)
    as a user would: against the installed package, without the checkout on PYTHONPATH (``cwd``
    must be outside the checkout)."""
    if ROOT in (Path(cwd).resolve(), *Path(cwd).resolve().parents):
        raise ValueError(f"run README snippets outside the checkout, not in {cwd}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("ORT_DISABLE_TELEMETRY", "1")
    if snippet.lang == "python":
        cmd = [python, "-c", snippet.code]
    elif snippet.lang == "bash":
        env["PATH"] = os.pathsep.join([str(Path(python).parent), env.get("PATH", "")])
        cmd = ["bash", "-e", "-o", "pipefail", "-c", snippet.code]
    else:
        raise ValueError(f"README block {snippet.index} has language {snippet.lang!r}: python or bash only")
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
