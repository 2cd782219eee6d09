"""``python -m rewrite {fuse,lower,inspect} ...`` (see rewrite.cli)."""

import sys

from rewrite.cli import main

sys.exit(main())
