"""Slips: errors in one kernel's own text rather than lessons about Triton or PyTorch.

A slip is a typo or an oversight of the kind no rule can prevent: code that is not valid Python,
a name the kernel never defines or imports, a misspelling of a real module attribute
(``tl.arang`` for ``tl.arange``), a module that does not exist. Its failure is recorded as
history but makes and supports no rule: a rule goes into every prompt, and "you cannot misspell
arange" teaches nothing there.

The line is drawn against the real modules: a name that exists here (another Triton version
lacked it), or that is no misspelling of anything they have (``tl.tanh``, an API that does not
exist), is a lesson; so is a name the kernel defines but cannot reach (one branch of an ``if``,
a local of ``forward``) and a Python builtin the GPU compiler does not know (``abs``).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import importlib
import importlib.util
import pkgutil
import re
import sys
from types import ModuleType
from typing import Literal

from pydantic import BaseModel

SlipKind = Literal["syntax", "undefined_name", "misspelt_attribute", "missing_module"]

_SYNTAX_TYPES = frozenset({"SyntaxError", "IndentationError", "TabError"})
# The interpreter says "name 'x' is not defined", the GPU compiler "x is not defined".
_UNDEFINED = re.compile(r"^(?:name )?'?(?P<name>[A-Za-z_]\w*)'? is not defined\b")
_MODULE_ATTRIBUTE = re.compile(
    r"module '(?P<owner>[\w.]+)' has no attribute '(?P<name>\w+)'"
    r"|cannot import name '(?P<imported>\w+)' from '(?P<source>[\w.]+)'"
)
_OBJECT_ATTRIBUTE = re.compile(r"'(?P<owner>\w+)' object has no attribute '(?P<name>\w+)'")
_NO_MODULE = re.compile(r"No module named '(?P<name>[\w.]+)'")

# Only these packages are imported to check a name against: importing one runs its code.
_CHECKED_ROOTS = frozenset({"triton", "torch", "math"})
_CLASSES = {"Tensor": ("torch", "Tensor"), "tensor": ("triton.language", "tensor")}
# difflib's ratio from which a missing name reads as a misspelling of a real one (arang/arange
# 0.91, zero/zeros 0.89; tanh and gelu match nothing at all).
_MISSPELLING = 0.8


class Slip(BaseModel, frozen=True):
    kind: SlipKind
    reason: str


def find_slip(error_type: str, message: str, code: str | None) -> Slip | None:
    """The slip an error shows, or None when it may be a lesson. ``error_type`` and ``message``
    are the innermost error (``signature.unwrap``'s); ``code`` is the kernel that raised it."""
    first_line = next((line.strip() for line in message.splitlines() if line.strip()), "")
    given = code if code and code.strip() else None
    if error_type in _SYNTAX_TYPES:
        # A kernel that parses did not raise it: the error came from code it generated.
        if given is None or not _parses(given):
            return Slip(kind="syntax", reason=f"the kernel is not valid Python ({error_type})")
        return None
    if error_type == "NameError":
        undefined = _UNDEFINED.match(first_line)
        if undefined and given is not None:
            return _undefined_name(undefined["name"], given)
        return None
    if error_type in {"ImportError", "ModuleNotFoundError"} and (
        missing := _NO_MODULE.search(first_line)
    ):
        return _missing_module(missing["name"])
    if error_type in {"AttributeError", "ImportError"}:
        attribute = _MODULE_ATTRIBUTE.search(first_line)
        if attribute:
            owner = attribute["owner"] or attribute["source"]
            name = attribute["name"] or attribute["imported"]
            return _misspelt(owner, _module(owner), name)
        attribute = _OBJECT_ATTRIBUTE.search(first_line)
        if attribute and attribute["owner"] in _CLASSES:
            module, cls = _CLASSES[attribute["owner"]]
            found = _module(module)
            return _misspelt(attribute["owner"], getattr(found, cls, None), attribute["name"])
    return None


def _undefined_name(name: str, code: str) -> Slip | None:
    if hasattr(builtins, name):
        return None
    bound = _bound_names(code)
    if bound is None or name in bound:
        return None
    near = difflib.get_close_matches(name, sorted(bound), n=1, cutoff=_MISSPELLING)
    hint = f" (a typo of {near[0]!r}?)" if near else ""
    return Slip(
        kind="undefined_name",
        reason=f"{name!r} is never defined or imported in this kernel{hint}",
    )


def _misspelt(owner: str, found: object | None, name: str) -> Slip | None:
    if found is None or hasattr(found, name):
        return None
    near = _misspelling(name, dir(found))
    if near is None:
        return None
    return Slip(
        kind="misspelt_attribute",
        reason=f"{owner} has no attribute {name!r}: a misspelling of {near!r}",
    )


def _missing_module(dotted: str) -> Slip | None:
    root, *rest = dotted.split(".")
    try:
        installed = importlib.util.find_spec(root) is not None
    except (ImportError, ValueError):
        return None
    if not installed:
        near = _misspelling(root, list({m.partition(".")[0] for m in sys.modules}))
        hint = f" (a typo of {near!r}?)" if near else ""
        return Slip(kind="missing_module", reason=f"module {root!r} is not installed{hint}")
    if root not in _CHECKED_ROOTS or not rest:
        return None
    # The deepest package that exists, and whether the missing part misspells one of its own.
    parts = dotted.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        parent = _module(".".join(parts[:depth]))
        if parent is not None:
            children = dir(parent) + [m.name for m in pkgutil.iter_modules(_path(parent))]
            near = _misspelling(parts[depth], children)
            if near is None:
                return None
            return Slip(
                kind="missing_module",
                reason=f"module {dotted!r} does not exist: {parts[depth]!r} misspells {near!r}",
            )
    return None


def _misspelling(name: str, candidates: list[str]) -> str | None:
    public = [c for c in candidates if not c.startswith("_") and c != name]
    for candidate in public:
        if candidate.lower() == name.lower():
            return candidate
    near = difflib.get_close_matches(name, public, n=1, cutoff=_MISSPELLING)
    return near[0] if near else None


def _module(name: str) -> ModuleType | None:
    if name.partition(".")[0] not in _CHECKED_ROOTS:
        return None
    try:
        return importlib.import_module(name)
    except Exception:  # a module that fails to import here tells nothing about the kernel
        return None


def _path(module: ModuleType) -> list[str]:
    return list(getattr(module, "__path__", []))


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # nested past the parser
        return False
    return True


def _bound_names(code: str) -> set[str] | None:
    """Every name the code binds anywhere, or None when that cannot be told (it does not
    parse, or a star import may bind anything)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # nested past the parser
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        match node:
            case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef():
                names.add(node.name)
            case ast.arg():
                names.add(node.arg)
            case ast.Name(ctx=ast.Store() | ast.Del()):
                names.add(node.id)
            case ast.alias(name="*"):
                return None
            case ast.alias():
                names.add(node.asname or node.name.partition(".")[0])
            case ast.Global() | ast.Nonlocal():
                names.update(node.names)
            case ast.ExceptHandler(name=str() as name):
                names.add(name)
            case ast.MatchAs(name=str() as name) | ast.MatchStar(name=str() as name):
                names.add(name)
            case ast.MatchMapping(rest=str() as name):
                names.add(name)
    return names
