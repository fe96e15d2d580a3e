"""Explore: the MCTS search over kernels, with small (patch) and large (regenerate) steps.

The tree lives in the store, so searches survive a killed process and several processes can
work on one search at once. ``SearchEngine`` has one method per MCP tool; ``docs/search.md``
describes the method and its settings (``Settings().search``).
"""

from typing import TYPE_CHECKING

from adaexplore_mcp.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from adaexplore_mcp.search_engine.engine import SearchEngine
    from adaexplore_mcp.search_engine.errors import (
        BudgetExhausted,
        EditFailure,
        InvalidStep,
        NoChange,
        NumberedLine,
        PatchError,
        SearchError,
        UnknownNode,
        UnknownSearch,
    )
    from adaexplore_mcp.search_engine.leases import LeaseView
    from adaexplore_mcp.search_engine.models import (
        Action,
        BestKernel,
        Budget,
        Candidate,
        Edit,
        ForkOrigin,
        Measurement,
        MemoryEntry,
        NodeSummary,
        NodeView,
        PoolEntry,
        SearchExport,
        SearchInfo,
        Selection,
        StepResult,
        TreeView,
        Usage,
    )
    from adaexplore_mcp.search_engine.patching import apply_edits

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Action": "models",
        "BestKernel": "models",
        "Budget": "models",
        "BudgetExhausted": "errors",
        "Candidate": "models",
        "Edit": "models",
        "EditFailure": "errors",
        "ForkOrigin": "models",
        "InvalidStep": "errors",
        "LeaseView": "leases",
        "Measurement": "models",
        "MemoryEntry": "models",
        "NoChange": "errors",
        "NodeSummary": "models",
        "NodeView": "models",
        "NumberedLine": "errors",
        "PatchError": "errors",
        "PoolEntry": "models",
        "SearchEngine": "engine",
        "SearchError": "errors",
        "SearchExport": "models",
        "SearchInfo": "models",
        "Selection": "models",
        "StepResult": "models",
        "TreeView": "models",
        "UnknownNode": "errors",
        "UnknownSearch": "errors",
        "Usage": "models",
        "apply_edits": "patching",
    },
)

__all__ = [
    "Action",
    "BestKernel",
    "Budget",
    "BudgetExhausted",
    "Candidate",
    "Edit",
    "EditFailure",
    "ForkOrigin",
    "InvalidStep",
    "LeaseView",
    "Measurement",
    "MemoryEntry",
    "NoChange",
    "NodeSummary",
    "NodeView",
    "NumberedLine",
    "PatchError",
    "PoolEntry",
    "SearchEngine",
    "SearchError",
    "SearchExport",
    "SearchInfo",
    "Selection",
    "StepResult",
    "TreeView",
    "UnknownNode",
    "UnknownSearch",
    "Usage",
    "apply_edits",
]
