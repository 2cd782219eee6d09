"""Regenerate every committed ONNX fixture in tests/fixtures/ (see models/fixtures.py).

Usage: .venv/bin/python scripts/make_fixtures.py [OUT_DIR] [--only NAME ...]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.fixtures import main

if __name__ == "__main__":
    raise SystemExit(main())
