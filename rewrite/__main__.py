"""``python -m ort_ops.rewrite {fuse,lower,inspect} ...`` (see rewrite.cli)."""

import sys

from ort_ops.rewrite.cli import main

sys.exit(main())
