"""crd-scheduler's scheduling core: pure Python, no Kubernetes client, no Kopf.

Layers (enforced by import-linter, see ``.importlinter``):

- ``framework``: the public plugin API (what a plugin author imports);
- ``plugins``: in-tree plugins, which import only ``framework``;
- ``config``: profile models, the single source of the CRD schemas;
- ``runtime``, ``queue``, ``cache``: the machinery that runs plugins;
- ``scheduler``: the loop (scheduling cycle, binding cycle) over a backend;
- ``simulator``: the in-memory backend behind ``crd-scheduler simulate``.
"""
