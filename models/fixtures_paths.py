"""Where the committed fixtures live (no imports: usable without PyTorch)."""

from pathlib import Path

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
