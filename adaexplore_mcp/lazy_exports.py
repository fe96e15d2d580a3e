"""Public names of a package that import their module on first use.

`adaexplore-mcp serve` must answer `initialize` before its client gives up, and a package's
``__init__`` that imports every submodule makes whoever needs one model pay for the whole
package (the judge's local pool and wire protocol, the memory's distiller, the search engine).
A package that uses this declares which submodule defines each of its public names; importing
the package imports none of them, and ``from package import Name`` imports the one module that
defines ``Name`` (and what that module imports).

    __getattr__, __dir__ = lazy_exports(__name__, {"EvalResult": "result", ...})

Each such package keeps the same names as real imports under ``TYPE_CHECKING`` for type
checkers and readers; ``tests/test_lazy_exports.py`` checks that they agree with the table.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``. ``exports`` maps each public name to
    the submodule that defines it, relative to the package (``"pool.local"``); where the module
    calls it something else, ``"module:its_name"``."""

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        # the import statement's machinery, not importlib.import_module: `python -X importtime`
        # (benchmarks/mcp_initialize.py) reports only modules imported through it
        __import__(f"{package}.{module}")
        value = getattr(sys.modules[f"{package}.{module}"], attribute or name)
        # bound on the package, so the next lookup of this name does not come here
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    # A name that is also the name of its module (memory's `signature`) is resolved now: the
    # import system binds a submodule to its name on the package when the submodule is first
    # imported, from wherever, and the name would then be the module instead.
    for name, where in exports.items():
        if where.partition(":")[0].rpartition(".")[2] == name:
            __getattr__(name)

    return __getattr__, __dir__
