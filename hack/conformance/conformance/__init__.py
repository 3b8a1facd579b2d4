"""``scripts/conformance``: upstream's e2e suite (``e2e.test``) against kube-scheduler and
crd-scheduler on a dev cluster of its own with kwok nodes; see hack/conformance/README.md."""
