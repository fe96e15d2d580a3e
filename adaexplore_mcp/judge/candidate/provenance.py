"""Where a code object comes from: the audit hook and the recorders take a frame whose code
names an installed package's file for that package's code. These checks keep the candidate
from making code that names such a file, by each route Python has: compiling text under the
name, unmarshalling bytes, or the import machinery's renaming of code it loaded (which raises
no audit event, so it is guarded in ``_imp`` itself). Code an installed file really holds (its
text compiled, its cached bytecode loaded) passes.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import sys
from collections.abc import Callable, Iterator
from types import CodeType, FrameType
from typing import Any

from adaexplore_mcp.judge.candidate.gates import gate
from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

RENAMING = (
    "code that names another file (a code object or function built, a function given "
    "another's code, code compiled, unmarshalled or renamed under a package's file name, or "
    "compiled from a syntax tree) passes for Triton's or torch's"
)


def compiles_under_a_packages_name(args: tuple, installed: tuple[str, ...]) -> bool:
    """Whether ``compile`` may be naming an installed package's file for other code than that
    file holds. Importing a module whose bytecode is not cached compiles the file's own text
    under its own name (a GPU machine's image ships no bytecode), and that is allowed. A syntax
    tree's event carries no file name at all, so the candidate may not compile one."""
    if len(args) < 2:
        return False
    source, filename = args[0], args[1]
    if not isinstance(source, bytes | str):
        return True
    if not isinstance(filename, str | bytes):
        return False
    real = os.path.realpath(os.fsdecode(filename))
    if not real.startswith(installed):
        return False
    text = source.encode() if isinstance(source, str) else source
    return _read(real, len(text)) != text


def unmarshals_under_a_packages_name(args: tuple, installed: tuple[str, ...]) -> bool:
    """Whether ``marshal.loads`` makes code naming an installed package's file that is not
    that file's cached bytecode (bytes whose file name was rewritten)."""
    data = args[0] if args else None
    if not isinstance(data, bytes | bytearray | memoryview):
        return True  # nothing to look at
    try:
        loaded = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return False  # it fails for the candidate too
    for code in _code_objects(loaded):
        real = os.path.realpath(code.co_filename)
        if real.startswith(installed):
            return bytes(data) != _cached_bytecode(real)
    return False


def guard_renaming(
    candidates: Callable[[FrameType | None], bool], record: Callable[[str], None]
) -> None:
    """``_imp._fix_co_filename`` renames a code object in place, with no audit event: the
    import machinery gives code loaded from cached bytecode its source's name. Called by the
    candidate's code (``candidates(frame)``: the candidate's code runs there) it may only give
    code an installed file's name where that file's cached bytecode holds the same code. A
    fresh ``_imp`` module (with the original) is not made for the candidate either."""
    import _imp

    def caller() -> FrameType | None:
        return sys._getframe(4)  # past this function, the rule, the gate's check and the gate

    def rename_allowed(args: tuple) -> bool:
        if len(args) != 2 or not isinstance(args[0], CodeType) or not isinstance(args[1], str):
            return True  # _imp's own error
        code, name = args
        return code.co_filename == name or not candidates(caller()) or _holds(name, code)

    def create_allowed(args: tuple) -> bool:
        named = getattr(args[0] if args else None, "name", None)
        return named != "_imp" or not candidates(caller())

    def refuse(what: str) -> Any:
        def raise_() -> Any:
            record(f"{what} is not allowed: {RENAMING}")
            raise PermissionError(f"refused by the judge: {what} is not allowed")

        return raise_

    for name, allowed, what in (
        ("_fix_co_filename", rename_allowed, "_imp._fix_co_filename"),
        ("create_builtin", create_allowed, "a second _imp module"),
    ):
        setattr(_imp, name, gate(getattr(_imp, name), allowed, refuse(what)))


def _holds(name: str, code: CodeType) -> bool:
    """Whether the cached bytecode of the file ``name`` (its real path) holds ``code``. Code
    objects compare equal whatever file they name."""
    cached = _cached_bytecode(os.path.realpath(name))
    if cached is None:
        return False
    try:
        return marshal.loads(cached) == code
    except (EOFError, ValueError, TypeError):
        return False


def _cached_bytecode(source: str) -> bytes | None:
    """The marshalled code of ``source``'s cached bytecode (past the 16-byte header)."""
    try:
        path = importlib.util.cache_from_source(source) if source.endswith(".py") else source
    except (NotImplementedError, ValueError):
        return None
    data = _read(path, None)
    return data[16:] if data is not None else None


def _read(path: str, size: int | None) -> bytes | None:
    """The file's bytes; None where it cannot be read or is not ``size`` bytes long."""
    try:
        if size is not None and os.path.getsize(path) != size:
            return None
        with open(path, "rb") as file:
            return file.read()
    except OSError:
        return None


def _code_objects(value: Any) -> Iterator[CodeType]:
    stack = [value]
    seen = 0
    while stack and seen < 100_000:
        item = stack.pop()
        seen += 1
        if isinstance(item, CodeType):
            yield item
            stack.extend(item.co_consts)
        elif isinstance(item, tuple | list | frozenset | set):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
