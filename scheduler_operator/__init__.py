"""The crd-scheduler operator and its command line (``crd-scheduler``).

The operator is a thin backend of the scheduler loop in ``scheduler_core`` over the Kubernetes
API; ``cli`` is the ``crd-scheduler`` entry point, whose ``simulate`` verb runs the same loop
over the in-memory cluster of ``scheduler_core.simulator`` and whose ``run`` verb starts
``app``. The modules, from the watch to the API:

* ``handlers``: Kopf event handlers (no cause handlers: Kopf writes nothing on objects);
* ``informer``: the last body seen per object, turning events into add/update/delete calls;
* ``reconciler``: SchedulerProfiles and PluginConfigs into frameworks, and their status;
* ``writer``: status and events of custom resources, written by the leader only;
* ``backend``: the scheduler's Backend and ClusterAPI (bind; the plugins' other writes, one request each; reports);
* ``recorder``: events.k8s.io/v1 Events with a spam filter;
* ``calls``: blocking client calls on bounded thread lanes, off the event loop;
* ``leader``: Lease-based leader election with client-go's semantics;
* ``app``: the wiring, cache sync before scheduling, the leading loop;
* ``kube``, ``kopfsettings``, ``options``, ``resources``: helpers and names.
"""
