"""A sample out-of-tree crd-scheduler plugin package (see docs/writing-a-plugin.md)."""
