"""Explore: the MCTS search over kernels, with small (patch) and large (regenerate) steps.

The tree lives in the store, so searches survive a killed process and several processes can
work on one search at once. ``SearchEngine`` has one method per MCP tool; ``docs/search.md``
describes the method and its settings (``Settings().search``).
"""

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
