"""The I/O to the API server: one HTTP layer for requests and watches, its error and its limits.

The bottom layer of the operator's own code: it imports nothing of ``scheduler_operator`` outside
itself. Imported as ``scheduler_operator.io``, never shadowing the stdlib's ``io`` (imports are
absolute).
"""
