"""A loopback-only Kubernetes control plane for the e2e tests, driven by ``scripts/dev-cluster``.

The binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) are built from the
Go modules pinned in ``hack/devcluster/go.mod`` (:mod:`.build`), certificates and kubeconfigs are
made with the ``openssl`` CLI (:mod:`.pki`), processes are started detached and tracked by pid
files (:mod:`.process`), and :mod:`.cluster` / :mod:`.scheduler` put them together.
Standard library only, so the script runs under any Python 3.11+.
"""
