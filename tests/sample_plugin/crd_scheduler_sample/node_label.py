"""SampleNodeLabel: keep pods on nodes that carry a label, and prefer nodes whose value ranks high.

An out-of-tree plugin written only against ``scheduler_core.framework``, the public plugin API:
a class with ``name``, ``args_model`` (a pydantic model with defaults) and the methods of the
extension points it serves (Filter and Score here). It reaches crd-scheduler through the
``crd_scheduler.plugins`` entry point of its package (``pyproject.toml``), and a profile enables
it by the entry point's name, like any in-tree plugin.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from scheduler_core.framework import MAX_NODE_SCORE, CycleState, Handle, NodeInfo, PodInfo, Status

NAME = "SampleNodeLabel"
ERR_REASON_MISSING = "node(s) didn't have the label {key}"


class NodeLabelArgs(BaseModel):
    """Args of SampleNodeLabel (``pluginConfig[].args``), validated when the profile is built."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    key: str = Field(default="sample.crd-scheduler.io/pool", min_length=1, description="The node label required.")
    preferred_values: list[str] = Field(
        default_factory=list,
        alias="preferredValues",
        description="Values in order of preference: the first scores 100, later ones less, others 0.",
    )


class NodeLabel:
    name = NAME
    args_model = NodeLabelArgs

    def __init__(self, args: NodeLabelArgs | None, handle: Handle) -> None:
        self._args = args or NodeLabelArgs()
        self._handle = handle

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if self._args.key in node.labels:
            return None
        return Status.unresolvable(ERR_REASON_MISSING.format(key=self._args.key))

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        values = self._args.preferred_values
        value = node.labels.get(self._args.key)
        if value is None or value not in values:
            return 0, None
        return MAX_NODE_SCORE - values.index(value) * MAX_NODE_SCORE // len(values), None
