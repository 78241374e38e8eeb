"""`python -m kernellab`: see kernellab.cli."""

import sys

from kernellab.cli import main

sys.exit(main())
