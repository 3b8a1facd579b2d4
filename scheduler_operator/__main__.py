"""``python -m scheduler_operator`` is ``crd-scheduler``."""

import sys

from scheduler_operator.cli import main

sys.exit(main())
