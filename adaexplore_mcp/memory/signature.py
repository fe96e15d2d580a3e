"""Failure signatures: the same mistake in different kernels gets the same signature.

A signature is the error's innermost exception type plus its message with everything that varies
between kernels removed: the kernel's own names, line and column numbers, file paths, addresses
and numbers (shapes, sizes, indices). Triton reports one mistake in several wrappings (the CPU
interpreter's ``InterpreterError: ValueError("…")``, the GPU compiler's ``CompilationError: at
12:8: <source> … ValueError(…)``); both unwrap to the same inner error, so a mistake made on the
interpreter and on a GPU clusters together.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Collection

from pydantic import BaseModel, Field

from adaexplore_mcp.memory.slips import find_slip

# Exception types that only wrap the error that matters.
_WRAPPERS = frozenset(
    {"CompilationError", "InterpreterError", "TritonError", "CompileTimeAssertionFailure"}
)
_EXCEPTION_CALL = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception))\((?P<body>.*)\)$", re.S
)
_TYPE_PREFIX = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Warning)):\s*(?P<body>.*)$", re.S
)
_FIRST_TYPE = re.compile(r"\b([A-Z]\w*(?:Error|Exception))\b")
_TRITON_LOCATION = re.compile(r"^at \d+:\d+:\s*$", re.M)

_PATH = re.compile(r"(?:[\w.-]*/)+[\w.-]+\.py(?::\d+)?|\bkernel\.py(?::\d+)?")
_LINE = re.compile(r"\b(?:line|lines|column|col)\s+\d+(?:\s*[-:]\s*\d+)?", re.I)
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_OBJECT_REPR = re.compile(r"<([\w.]+) object at <addr>>")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")
_SHAPE = re.compile(r"on shape [\w-]+(?: \([^)]*\))?")
_QUOTED = re.compile(r"'[^'\n]{1,80}'|\"[^\"\n]{1,80}\"|`[^`\n]{1,80}`")
_SPACE = re.compile(r"\s+")

# Wrong results carry no exception; their kind is the message's first clause.
INCORRECT_KINDS = ("nonfinite", "shape", "dtype", "count", "type", "input_modified", "values")


class Signature(BaseModel, frozen=True):
    key: str = Field(description="16 hex digits identifying the normalized error.")
    error_type: str = Field(description="The innermost exception type, e.g. 'ValueError'.")
    text: str = Field(description="The normalized message the key is computed from.")
    distinctive: bool = Field(
        description="Specific enough that equal signatures mean the same mistake (compile and "
        "runtime errors with a message); wrong results and slips are not."
    )
    slip: str | None = Field(
        default=None,
        description="Why the error is a slip of the kernel's own text (a typo, a name it never "
        "defines, a module that does not exist; see slips.py), which makes no rule; None when "
        "it may teach one.",
    )


def kernel_names(code: str) -> set[str]:
    """Names the kernel defines itself: functions, classes, arguments, assigned variables and
    import aliases. A message that mentions one of them is about this kernel, not the mistake."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, MemoryError, RecursionError):
        # An excerpt or a kernel that does not parse (or nests past the parser's limit): fall
        # back to assignment-looking names.
        return set(re.findall(r"^\s*([A-Za-z_]\w*)\s*=", code, re.M)) | set(
            re.findall(r"\bdef\s+([A-Za-z_]\w*)", code)
        )
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias) and node.asname:
            names.add(node.asname)
    # Conventional names are shared by every kernel; they carry meaning in a message.
    return {n for n in names if len(n) > 1} - _SHARED_NAMES


_SHARED_NAMES = frozenset(
    {"self", "forward", "ModelNew", "Model", "torch", "triton", "tl", "nn", "F", "x", "y"}
)


def unwrap(error_type: str, message: str) -> tuple[str, str]:
    """The innermost exception type and message of a possibly wrapped error."""
    error_type = error_type.rsplit(".", 1)[-1] or "Error"
    body = message.strip()
    for _ in range(4):
        # GPU compiler: "at 12:8:\n<source>\n    ^\nValueError('…')" — the error follows the caret.
        if _TRITON_LOCATION.search(body):
            tail = body.rsplit("^", 1)[-1].strip()
            if tail:
                body = tail
        # Prefixes such as "InterpreterError: ValueError(...)" written by the judge.
        prefixed = _TYPE_PREFIX.match(body)
        if prefixed and prefixed["type"].rsplit(".", 1)[-1] in _WRAPPERS | {error_type}:
            error_type, body = prefixed["type"].rsplit(".", 1)[-1], prefixed["body"].strip()
            continue
        call = _EXCEPTION_CALL.match(body)
        if call:
            error_type, body = call["type"].rsplit(".", 1)[-1], _strip_quotes(call["body"])
            continue
        break
    if error_type in _WRAPPERS:
        inner = _FIRST_TYPE.search(body)
        if inner and inner.group(1) not in _WRAPPERS:
            error_type = inner.group(1)
    return error_type, body


# What a signature reads of a message: the patterns below take time that grows faster than
# the text (a path's pattern on 200,000 characters without a slash took 86 s), and a failure's
# kind is told in its first lines
SIGNATURE_CHARS = 4000


def normalize_message(message: str, names: Collection[str] = frozenset()) -> str:
    text = _SHAPE.sub("on shape <shape>", message[:SIGNATURE_CHARS])
    text = _PATH.sub("<file>", text)
    text = _LINE.sub("<line>", text)
    text = _ADDRESS.sub("<addr>", text)
    text = _OBJECT_REPR.sub(r"<\1>", text)
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", "<name>", text)
    text = _QUOTED.sub(_quoted_name, text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip().rstrip(".")


def signature(
    error_type: str, message: str, *, code: str | None = None, kind: str | None = None
) -> Signature:
    """The signature of an error. ``kind`` is the verdict (``compile_error``, ``incorrect``, …)
    when known; wrong results are clustered by what was wrong, never treated as distinctive."""
    names = kernel_names(code) if code else set()
    inner_type, body = unwrap(error_type or "Error", message)
    first_line = next((line for line in body.splitlines() if line.strip()), "")
    text = normalize_message(first_line, names)
    slip = find_slip(inner_type, body, code)
    distinctive = slip is None and kind not in {"incorrect", "timeout"} and len(text.split()) >= 3
    # The GPU compiler keeps only the inner message ("at 3:11: … ^ arange's range must be…"),
    # the interpreter keeps its type too (ValueError("arange's range…")): key both on the text.
    wrapped = error_type.rsplit(".", 1)[-1] in _WRAPPERS or inner_type in _WRAPPERS
    # A slip's key is its own: "name 'offz' is not defined" must never share one with the same
    # message from a kernel that does define the name, whose failure may be filed under a rule.
    family = "slip" if slip else "triton-compile" if wrapped else inner_type
    digest = hashlib.sha256(f"{family}|{text}".encode()).hexdigest()[:16]
    return Signature(
        key=digest,
        error_type=inner_type,
        text=text,
        distinctive=distinctive,
        slip=slip.reason if slip else None,
    )


def first_exception_type(text: str) -> str | None:
    """The first exception type named in free text (``"NameError: …"`` gives ``NameError``)."""
    match = _FIRST_TYPE.search(text)
    return match.group(1) if match else None


def _strip_quotes(body: str) -> str:
    body = body.strip()
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "'\"":
        return body[1:-1]
    return body


def _quoted_name(match: re.Match[str]) -> str:
    inner = match.group(0)[1:-1]
    # Quoted code or a single identifier is the kernel's; quoted prose stays.
    if re.fullmatch(r"[\w.\[\](), ]+", inner) and " " not in inner.strip():
        return "<name>"
    return match.group(0)
