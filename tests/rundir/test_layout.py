"""The run directory's file names are spelled in ``rundir/layout.py`` and nowhere else in the
package, so its layout can be read (and changed) in one place."""

from __future__ import annotations

import ast
from pathlib import Path

import adaexplore_mcp
from adaexplore_mcp.rundir import RunPaths, layout

PACKAGE = Path(adaexplore_mcp.__file__).parent
LAYOUT = Path(layout.__file__)

NAMES = {
    value
    for key, value in vars(layout).items()
    if key.endswith(("_FILE", "_DIR")) and isinstance(value, str)
}
# Words with other meanings too (a folder of generated tasks, the judge's own candidate file):
# spelled elsewhere they are a run directory's only in a path joined with another of its names.
AMBIGUOUS = {layout.TASKS_DIR, layout.STEPS_DIR, layout.KERNEL_FILE}


def _operands(node: ast.expr) -> list[ast.expr]:
    """The parts of a path joined with ``/``, left to right."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _operands(node.left) + _operands(node.right)
    return [node]


def spelled_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of each run-directory name a module spells: any string equal to a distinct
    name, and an ambiguous one in a path joined with another run-directory name."""
    tree = ast.parse(source)
    joins = [n for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)]
    inner = {id(side) for n in joins for side in (n.left, n.right)}
    found = set()
    for join in (n for n in joins if id(n) not in inner):
        parts = [p for p in _operands(join) if isinstance(p, ast.Constant) and p.value in NAMES]
        if len(parts) > 1:
            found.update((part.lineno, part.value) for part in parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in NAMES - AMBIGUOUS:
            found.add((node.lineno, node.value))
    return sorted(found)


def test_the_layout_names_every_file_a_run_directory_holds():
    assert {"run.json", "events.jsonl", "usage.json", "task.json", "summary.json"} <= NAMES
    assert {"best_kernel.py", "reeval.json", "step.json", "verdict.json", "prompt.txt"} <= NAMES
    assert {"reply.txt", "kernel.py", "report.html", "tasks", "steps", "runs"} <= NAMES


def test_no_module_outside_the_layout_spells_a_run_directory_file_name():
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line}: {name!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != LAYOUT
        for line, name in spelled_names(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "use adaexplore_mcp.rundir.layout instead:\n" + "\n".join(offenders)


def test_the_check_catches_a_name_spelled_as_a_string_or_joined_onto_a_path():
    assert spelled_names('write(path, "summary.json")') == [(1, "summary.json")]
    assert spelled_names('home / "runs" / name') == [(1, "runs")]
    assert spelled_names('run / "tasks" / task / "steps"') == [(1, "steps"), (1, "tasks")]
    assert spelled_names('client.call("tasks"); home / "adapt" / "tasks"') == []


def test_paths_place_each_file_where_the_format_says(tmp_path):
    paths = RunPaths(tmp_path)
    assert paths.config == tmp_path / "run.json"
    assert paths.events == tmp_path / "events.jsonl"
    assert paths.task("gelu").best_kernel == tmp_path / "tasks" / "gelu" / "best_kernel.py"
    step = paths.step("gelu", 7)
    assert step.directory == tmp_path / "tasks" / "gelu" / "steps" / "0007"
    assert step.verdict == step.directory / "verdict.json"
    assert step.record == step.directory / "step.json"
