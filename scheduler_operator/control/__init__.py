"""The running operator (``crd-scheduler run``) and its extender twin (``extender serve``).

Over the watches (``scheduler_operator.watch``) and the HTTP layer (``scheduler_operator.io``);
under the command line (``scheduler_operator.cli``). Not named ``operator``: the stdlib has one,
and the whole package is already the operator.
"""
