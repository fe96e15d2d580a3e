"""The packages whose names import their module on first use (``adaexplore_mcp.lazy_exports``):
they keep the same public names, the ``TYPE_CHECKING`` imports that type checkers read agree
with the table the package resolves names from, and importing a package imports none of its
modules."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

LAZY_PACKAGES = (
    "adaexplore_mcp.judge",
    "adaexplore_mcp.judge.profile",
    "adaexplore_mcp.mcp_server",
    "adaexplore_mcp.memory",
    "adaexplore_mcp.search_engine",
)


def _in_fresh_interpreter(code: str) -> object:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _type_checking_imports(package: str) -> dict[str, str]:
    """Public name -> 'module' or 'module:its_name', as the package's TYPE_CHECKING block
    imports it."""
    path = Path(importlib.import_module(package).__file__)
    tree = ast.parse(path.read_text())
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )
    names = {}
    for statement in block.body:
        assert isinstance(statement, ast.ImportFrom), ast.dump(statement)
        module = statement.module.removeprefix(package + ".")
        for alias in statement.names:
            names[alias.asname or alias.name] = (
                module if alias.asname is None else f"{module}:{alias.name}"
            )
    return names


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_resolves_to_the_object_its_module_defines(package: str) -> None:
    surface = importlib.import_module(package)
    imports = _type_checking_imports(package)
    assert sorted(imports) == sorted(surface.__all__)
    for name, where in imports.items():
        module, _, its_name = where.partition(":")
        defined = getattr(importlib.import_module(f"{package}.{module}"), its_name or name)
        assert getattr(surface, name) is defined, name
    assert set(surface.__all__) <= set(dir(surface))


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    import adaexplore_mcp.judge as judge

    with pytest.raises(AttributeError, match=r"'adaexplore_mcp\.judge' has no attribute 'Nope'"):
        judge.Nope  # noqa: B018
    with pytest.raises(ImportError, match="Nope"):
        exec("from adaexplore_mcp.memory import Nope")


def test_a_name_that_is_also_its_module_s_name_stays_the_name() -> None:
    """The import system binds a submodule to its name on the package when something imports
    it; the memory's ``signature`` is the function all the same."""
    answer = _in_fresh_interpreter(
        "import json\n"
        "import adaexplore_mcp.memory as memory\n"
        "import adaexplore_mcp.memory.signature\n"
        "import adaexplore_mcp.memory.skill_memory\n"
        "print(json.dumps(callable(memory.signature) and memory.signature.__name__))"
    )
    assert answer == "signature"


def test_importing_the_packages_imports_none_of_their_modules() -> None:
    """Nothing but the package itself, and every public name is still to be resolved (the table
    names no more than ``__all__``); except the memory's ``signature``, which is also the name
    of its module and so is resolved at once (with the module's own import, slips)."""
    answer = _in_fresh_interpreter(
        "import importlib, json, sys\n"
        f"packages = {LAZY_PACKAGES!r}\n"
        "unresolved = {}\n"
        "for name in packages:\n"
        "    p = importlib.import_module(name)\n"
        "    lazy = set(dir(p)) - set(vars(p)) | {'signature'}\n"
        "    unresolved[name] = sorted(lazy) == sorted({*p.__all__, 'signature'})\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('adaexplore_mcp.')"
        " or m in ('torch', 'triton', 'numpy'))\n"
        "print(json.dumps({'loaded': loaded, 'unresolved': unresolved}))"
    )
    assert answer == {
        "loaded": sorted(
            [
                *LAZY_PACKAGES,
                "adaexplore_mcp.lazy_exports",
                "adaexplore_mcp.memory.signature",
                "adaexplore_mcp.memory.slips",
            ]
        ),
        "unresolved": dict.fromkeys(LAZY_PACKAGES, True),
    }


def test_a_name_imports_the_module_that_defines_it_and_not_the_pool() -> None:
    loaded = _in_fresh_interpreter(
        "import json, sys\n"
        "from adaexplore_mcp.judge import EvalResult, JudgeError, QueueFull\n"
        "print(json.dumps([m for m in ('adaexplore_mcp.judge.result', "
        "'adaexplore_mcp.judge.exceptions', 'adaexplore_mcp.judge.pool.local', "
        "'adaexplore_mcp.judge.wire.subject', 'torch') if m in sys.modules]))"
    )
    assert loaded == ["adaexplore_mcp.judge.result", "adaexplore_mcp.judge.exceptions"]
