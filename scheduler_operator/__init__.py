"""The crd-scheduler operator and its command line (``crd-scheduler``).

The operator is a thin backend of the scheduler loop in ``scheduler_core`` over the Kubernetes
API; ``cli`` is the ``crd-scheduler`` entry point, whose ``simulate`` verb runs the same loop
over the in-memory cluster of ``scheduler_core.simulator`` and whose ``run`` verb starts
``app``. Its modules, by concern:

The running operator, from the watch to the API:

* ``reflector``: list, then watch, one kind into a store (client-go's Reflector);
* ``views``: the small views of watched objects the cache keeps;
* ``decoding``: tolerant JSON decoding, so one unreadable object never blocks a list;
* ``handlers``: Kopf event handlers for the custom resources (thin: each feeds a store);
* ``informer``: the stores, turning watch events into add/update/delete calls;
* ``reconciler``: SchedulerProfiles and PluginConfigs into frameworks, and their status;
* ``status``: the status of those custom resources, built from what the reconciler found;
* ``writer``: status and events of custom resources, written by the leader only;
* ``double_serving``: the ``DoubleServing`` condition (another scheduler binds our pods);
* ``backend``: the scheduler's Backend and ClusterAPI over the API (the simulator's twin);
* ``recorder``: events.k8s.io/v1 Events with kube-scheduler's spam filter;
* ``admission``: the validating admission webhook for both custom resources, served by Kopf;
* ``leader``: Lease-based leader election with client-go's semantics;
* ``fence``: the Lease as a fence: no write starts unless this replica surely still leads;
* ``app``: the wiring, cache sync before scheduling, the leading loop;
* ``serving``, ``health``, ``io_metrics``: ``/metrics``, ``/healthz``, ``/readyz``, and the
  operator's own I/O counters;
* ``collector``, ``logs``: the garbage collector's settings and the log format.

The I/O to the API server:

* ``transport``: the async HTTP layer (QPS/burst, timeouts, retries) for requests and watches;
* ``http1``: the lean HTTP/1.1 client under it;
* ``calls``: lanes bounding how many API calls are in flight (``critical`` binds apart from
  reports);
* ``kube``: the API error, the one retry policy, and where credentials come from.

The command line (``cli`` and its verbs):

* ``cli``, ``__main__``: the ``crd-scheduler`` entry point and its verbs;
* ``options``: what ``run`` can be told, without importing a client;
* ``output``, ``annotations``: what every verb prints, and GitHub workflow annotations;
* ``live``, ``snapshot``: read-only snapshots of a live cluster for the verbs that read one;
* ``explain_cmd``, ``whatif_cmd``, ``import_cmd``: ``explain``, ``simulate --from-cluster``
  and ``import-config``;
* ``extender_server``, ``extender_cli``: ``extender serve``, our plugins as an HTTP extender.

Names and settings: ``resources`` (the API resources watched and written; the custom
resources' names come from ``scheduler_core.names``), ``kopfsettings`` (Kopf's settings).
"""
