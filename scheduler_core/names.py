"""The names of crd-scheduler's API and of the schedulers, defined once.

The custom resources' group, version, kinds and plurals (``crds/`` is generated from
``scheduler_core.config.crd``, which reads them here), and the two scheduler names a reader
must not confuse: ours, the ``schedulerName`` of the built-in default profile, and upstream's,
the ``spec.schedulerName`` the API server gives a pod that names none (kube-scheduler's).

This module imports nothing, so every layer may import it: it is the bottom of the core's
layers in ``.importlinter``, below the framework. The operator reads it through
``scheduler_operator.resources``, which adds the built-in kinds it watches.
"""

from __future__ import annotations

GROUP = "scheduling.crd-scheduler.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

PROFILE_KIND = "SchedulerProfile"
PROFILE_PLURAL = "schedulerprofiles"
PLUGIN_CONFIG_KIND = "PluginConfig"
PLUGIN_CONFIG_PLURAL = "pluginconfigs"

# The built-in default profile's schedulerName (scheduler_core.defaults); `import-config`
# renames upstream's default to it unless told to take over kube-scheduler's pods.
DEFAULT_SCHEDULER_NAME = "crd-scheduler"
# core/v1's default of a pod's spec.schedulerName: the pods kube-scheduler serves.
UPSTREAM_DEFAULT_SCHEDULER_NAME = "default-scheduler"
