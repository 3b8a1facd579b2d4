"""The version of crd-scheduler, from one source: the package metadata (``pyproject.toml``).

``crd-scheduler --version``, ``crd-scheduler version``, the ``crd_scheduler_build_info`` gauge,
the image's labels and the chart's ``appVersion`` all read or are checked against it
(``docs/releasing.md``). :data:`KUBERNETES_VERSION` is the kube-scheduler release whose
behaviour (scores, filter reasons, messages, metric names) the framework matches, the version
``hack/devcluster/go.mod`` pins for the parity tests.
"""

from __future__ import annotations

import importlib.metadata
import platform

DISTRIBUTION = "crd-scheduler"
KUBERNETES_VERSION = "v1.36.3"


def _installed_version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
        return "0+unknown"


VERSION = _installed_version()
PYTHON_VERSION = platform.python_version()


def describe() -> str:
    """One line: ``crd-scheduler 0.1.0 (kube-scheduler v1.36.3, Python 3.11.7)``."""
    return f"{DISTRIBUTION} {VERSION} (kube-scheduler {KUBERNETES_VERSION}, Python {PYTHON_VERSION})"
