"""The crd-scheduler operator and its command line (``crd-scheduler``).

The operator is a thin backend of the scheduler loop in ``scheduler_core`` over the Kubernetes
API (Kopf handlers, binder, status writer); ``cli`` is the ``crd-scheduler`` entry point, whose
``simulate`` verb runs the same loop over the in-memory cluster of ``scheduler_core.simulator``.
"""
