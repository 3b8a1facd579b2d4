#!/usr/bin/env python3
"""Differential parity with the real kube-scheduler; see bench/parity_harness/ and bench/README.md.

    python bench/parity.py --scenarios 500 --seed 1

Prints the first disagreements, then ``agreement: P% (agreed/total)`` on its last line.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.parity_harness.cli import main  # after the path is set

if __name__ == "__main__":
    sys.exit(main())
