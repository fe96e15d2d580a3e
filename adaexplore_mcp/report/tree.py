"""The search tree as the report draws it: nodes from the store (every node with its code and
verdict) or, when the store does not hold the search, from the run's events and step kernels;
and a tidy layout (leaves side by side, each parent centred over its children)."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from adaexplore_mcp.rundir import TaskRun
from adaexplore_mcp.search_engine import SearchExport

X_GAP = 34.0  # between neighbouring leaves
Y_GAP = 70.0  # between depths
MARGIN = 30.0
CODE_LIMIT = 60_000  # characters of a node's code carried into the page

STATUS_COLOURS = {
    "root": "#64748b",
    "correct": "#16a34a",
    "incorrect": "#f59e0b",
    "compile_error": "#dc2626",
    "runtime_error": "#9f1239",
    "timeout": "#7c3aed",
    "rejected": "#111827",
}


class ReportNode(BaseModel):
    id: int
    parent_id: int | None
    action: str = Field(description="root | small | large")
    status: str = Field(description="root, or the judge's verdict")
    speedup: float | None
    runtime_ms: float | None = None
    reward: float | None = None
    message: str | None = None
    code: str | None = None
    step: int | None = Field(default=None, description="The run's step that made it.")
    best: bool = False
    x: float = 0.0
    y: float = 0.0

    @property
    def colour(self) -> str:
        return STATUS_COLOURS.get(self.status, "#94a3b8")

    @property
    def label(self) -> str:
        if self.status == "root":
            return "root"
        if self.status == "correct":
            return f"{self.speedup:.2f}×" if self.speedup is not None else "ok"
        return ""

    @property
    def title(self) -> str:
        parts = [f"node {self.id}", self.action, self.status.replace("_", " ")]
        if self.speedup is not None:
            parts.append(f"{self.speedup:.3g}× baseline")
        if self.runtime_ms is not None:
            parts.append(f"{self.runtime_ms:.4g} ms")
        return ", ".join(parts)


class Edge(BaseModel):
    action: str
    path: str = Field(description="SVG path data from the parent to the child.")


class TreeDrawing(BaseModel):
    source: str = Field(description="store | events")
    width: float
    height: float
    nodes: list[ReportNode]
    edges: list[Edge]

    def node(self, node_id: int) -> ReportNode | None:
        return next((n for n in self.nodes if n.id == node_id), None)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node in self.nodes:
            if node.status != "root":
                counts[node.status] = counts.get(node.status, 0) + 1
        return counts


def nodes_from_export(export: SearchExport) -> list[ReportNode]:
    return [
        ReportNode(
            id=node.id,
            parent_id=node.parent_id,
            action=node.action.value,
            status=node.status.value if node.status is not None else "root",
            speedup=node.speedup,
            runtime_ms=node.runtime_ms,
            reward=node.reward,
            message=node.result.message if node.result else None,
            code=_cap(node.code),
        )
        for node in export.nodes
    ]


def nodes_from_events(task: TaskRun) -> list[ReportNode]:
    """Node 0 stands for the reference; every step that made a node adds it."""
    nodes = {0: ReportNode(id=0, parent_id=None, action="root", status="root", speedup=None)}
    for event in sorted(task.events, key=lambda e: e.node_id if e.node_id is not None else -1):
        if event.node_id is None or event.node_id in nodes:
            continue
        parent = event.parent_id if event.parent_id in nodes else 0
        nodes[event.node_id] = ReportNode(
            id=event.node_id,
            parent_id=parent,
            action=event.action if event.action in ("small", "large") else "large",
            status=event.outcome,
            speedup=event.speedup_eager,
            runtime_ms=event.runtime_ms,
            message=event.reason,
            code=_cap(task.step_kernel(event.step)),
            step=event.step,
        )
    return list(nodes.values())


def draw(nodes: list[ReportNode], source: str, best_id: int | None) -> TreeDrawing:
    """Places the nodes and draws the edges (large steps solid, small steps dashed)."""
    slots, depths = layout((node.id, node.parent_id) for node in nodes)
    for node in nodes:
        node.x = MARGIN + slots[node.id] * X_GAP
        node.y = MARGIN + depths[node.id] * Y_GAP
        node.best = node.id == best_id
    by_id = {node.id: node for node in nodes}
    edges = []
    for node in nodes:
        parent = by_id.get(node.parent_id) if node.parent_id is not None else None
        if parent is None:
            continue
        middle = (parent.y + node.y) / 2
        path = (
            f"M{parent.x:.1f},{parent.y:.1f} C{parent.x:.1f},{middle:.1f} "
            f"{node.x:.1f},{middle:.1f} {node.x:.1f},{node.y:.1f}"
        )
        edges.append(Edge(action=node.action, path=path))
    width = 2 * MARGIN + max((slots[n.id] for n in nodes), default=0) * X_GAP
    height = 2 * MARGIN + max((depths[n.id] for n in nodes), default=0) * Y_GAP + 14
    return TreeDrawing(source=source, width=width, height=height, nodes=nodes, edges=edges)


def layout(pairs: Iterable[tuple[int, int | None]]) -> tuple[dict[int, float], dict[int, int]]:
    """Horizontal slot and depth of every node. Iterative, so a chain of thousands of small
    steps does not hit Python's recursion limit."""
    children: dict[int, list[int]] = {}
    roots = []
    ids = []
    for node_id, parent in pairs:
        ids.append(node_id)
        children.setdefault(node_id, [])
        if parent is None:
            roots.append(node_id)
        else:
            children.setdefault(parent, []).append(node_id)
    known = set(ids)
    roots += [p for p in children if p not in known]  # a parent nobody listed: draw it as a root
    slots: dict[int, float] = {}
    depths: dict[int, int] = {}
    next_slot = 0.0
    for root in roots:
        stack: list[tuple[int, int, bool]] = [(root, 0, False)]
        while stack:
            node_id, depth, expanded = stack.pop()
            kids = sorted(children.get(node_id, []))
            if not expanded:
                depths[node_id] = depth
                stack.append((node_id, depth, True))
                stack.extend((kid, depth + 1, False) for kid in reversed(kids))
            elif kids:
                slots[node_id] = (slots[kids[0]] + slots[kids[-1]]) / 2
            else:
                slots[node_id] = next_slot
                next_slot += 1
    return slots, depths


def _cap(code: str | None) -> str | None:
    if code is None or len(code) <= CODE_LIMIT:
        return code
    return code[:CODE_LIMIT] + "\n# … cut: the kernel is longer than the report shows\n"
