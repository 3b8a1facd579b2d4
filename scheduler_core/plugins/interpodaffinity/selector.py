"""Label selectors for affinity terms: the shared matcher of ``scheduler_core.plugins.labelselector``
(upstream ``metav1.LabelSelectorAsSelector`` / ``labels.Selector``), re-exported under the
names this plugin uses."""

from scheduler_core.plugins.labelselector import (
    DOES_NOT_EXIST,
    EVERYTHING,
    EXISTS,
    IN,
    NOT_IN,
    NOTHING,
    Requirement,
    Selector,
    SelectorError,
    parse,
)

__all__ = [
    "DOES_NOT_EXIST",
    "EVERYTHING",
    "EXISTS",
    "IN",
    "NOTHING",
    "NOT_IN",
    "Requirement",
    "Selector",
    "SelectorError",
    "parse",
]
