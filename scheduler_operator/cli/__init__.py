"""The ``crd-scheduler`` command line: the entry point (``command``) and one module per verb.

``main`` is re-exported for the console script (``crd-scheduler = "scheduler_operator.cli:main"``)
and ``python -m scheduler_operator``. The top layer: nothing else in the package imports it.
"""

from scheduler_operator.cli.command import main

__all__ = ["main"]
