"""The example plugins of examples/extender-plugins (docs/extenders.md), loaded from their file
without installing the example package, and the profile the tests serve them with."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

_PATH = Path(__file__).resolve().parents[3] / "examples" / "extender-plugins" / "label_plugins.py"
_spec = importlib.util.spec_from_file_location("label_plugins", _PATH)
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

RefuseLabel: Any = _module.RefuseLabel
ScoreByLabel: Any = _module.ScoreByLabel
REFUSE_LABEL: str = _module.REFUSE_LABEL
SCORE_LABEL: str = _module.SCORE_LABEL

PROFILE: dict[str, Any] = {
    "plugins": {
        "multiPoint": {"disabled": [{"name": "*"}], "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}]},
        "filter": {"enabled": [{"name": "NodeUnschedulable"}, {"name": "RefuseLabel"}]},
        "score": {"enabled": [{"name": "ScoreByLabel", "weight": 1}]},
    }
}
