"""Every class of the package has a name of its own, so that a name in a traceback, a log or a
review says which class it is without the module beside it.

The bundled tasks and solutions are left out: the task format itself names every task's class
``Model`` and every candidate's ``ModelNew``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import adaexplore_mcp

PACKAGE = Path(adaexplore_mcp.__file__).parent
BUNDLED = PACKAGE / "tasks" / "bundled"


def class_names(root: Path) -> dict[str, list[str]]:
    """Each class name defined under ``root`` (outside the bundled tasks), with the modules
    that define it."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if path.is_relative_to(BUNDLED):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found[node.name].append(str(path.relative_to(root.parent)))
    return found


def test_no_two_classes_share_a_name() -> None:
    shared = {name: paths for name, paths in class_names(PACKAGE).items() if len(paths) > 1}
    assert not shared, f"rename one of each: {shared}"


def test_the_walk_finds_a_shared_name(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("class Usage:\n    pass\n")
    (package / "sub" / "b.py").write_text("def f():\n    class Usage:\n        pass\n")
    assert class_names(package)["Usage"] == ["pkg/a.py", "pkg/sub/b.py"]
