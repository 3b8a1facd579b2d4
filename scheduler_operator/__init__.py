"""The crd-scheduler operator and its command line (``crd-scheduler``).

The operator is a thin backend of the scheduler loop in ``scheduler_core`` over the Kubernetes
API. Four sub-packages, each importing only those below it (the ``operator-layers`` contract in
``.importlinter``; ``kubernetes``, ``aiohttp`` and ``kopf`` are importable only in the modules
named there):

``cli``: the command line, the top layer; nothing else imports it.

* ``command``: the ``crd-scheduler`` entry point, its parser and verbs (``cli.main``; also
  ``python -m scheduler_operator``, ``__main__``);
* ``output``, ``annotations``: what every verb prints, and GitHub workflow annotations;
* ``logs``: how the long-running verbs log (text or JSON lines);
* ``live``, ``snapshot``: the options and the read-only snapshot of a live cluster;
* ``explain_cmd``, ``whatif_cmd``, ``import_cmd``: ``explain``, ``simulate --from-cluster``
  and ``import-config``;
* ``extender_cli``: reading ``extender serve``'s arguments.

``control``: the running operator (``run``) and its extender twin (``extender serve``). Not
named ``operator``: the whole package is the operator, and the stdlib has a module of that name.

* ``app``: the wiring, cache sync before scheduling, the leading loop;
* ``options``: what ``run`` can be told;
* ``handlers``, ``kopfsettings``: Kopf's event handlers for the custom resources, and its
  settings;
* ``reconciler``: SchedulerProfiles and PluginConfigs into frameworks, and their status;
* ``status``: the status of those custom resources, built from what the reconciler found;
* ``writer``: status and events of custom resources, written by the leader only;
* ``double_serving``: the ``DoubleServing`` condition (another scheduler binds our pods);
* ``admission``: the validating admission webhook for both custom resources, served by Kopf;
* ``backend``: the scheduler's Backend and ClusterAPI over the API (the simulator's twin);
* ``recorder``: events.k8s.io/v1 Events with kube-scheduler's spam filter;
* ``leader``: Lease-based leader election with client-go's semantics;
* ``fence``: the Lease as a fence: no write starts unless this replica surely still leads;
* ``serving``, ``health``, ``io_metrics``: ``/metrics``, ``/healthz``, ``/readyz``, and the
  operator's own I/O counters;
* ``collector``: the garbage collector's settings for a long-lived heap;
* ``extender_server``: ``extender serve``, our plugins as an HTTP extender.

``watch``: list-watch caches.

* ``reflector``: list, then watch, one kind into a store (client-go's Reflector);
* ``informer``: the stores, turning watch events into add/update/delete calls;
* ``views``: the small views of watched objects the cache keeps.

``io``: the I/O to the API server, the bottom layer (absolute imports: never the stdlib's ``io``).

* ``transport``: the async HTTP layer (QPS/burst, timeouts, retries) for requests and watches;
* ``http2``: the requests' HTTP/2 client under it, one multiplexed connection (``jh2``);
* ``http1``: the lean HTTP/1.1 client under it (the watches; the requests without HTTP/2);
* ``kube``: the API error, the one retry policy, and where credentials come from;
* ``calls``: lanes bounding how many API calls are in flight, and the client-side rate limit's
  defaults;
* ``decoding``: tolerant JSON decoding, so one unreadable object never blocks a list.

Beside them, under all four: ``resources``, the API resources watched and written (the custom
resources' names come from ``scheduler_core.names``).
"""
