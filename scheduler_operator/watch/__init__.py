"""List-watch caches: reflectors feeding stores, and the small views of the objects they keep.

Over the HTTP layer (``scheduler_operator.io``), under the running operator
(``scheduler_operator.control``) and the read-only verbs that take a snapshot.
"""
