"""Turning exceptions raised by candidate code into verdicts an agent can act on."""

from __future__ import annotations

import traceback

from adaexplore_mcp.judge.result import ErrorDetail, Phase, Status

KERNEL_FILE = "kernel.py"
REFERENCE_FILE = "reference.py"
_MESSAGE_LIMIT = 1500

# Raised by Triton when a kernel does not compile; the interpreter raises InterpreterError for
# the same mistakes (a non-power-of-two arange, an undefined name inside @triton.jit).
_COMPILE_ERROR_TYPES = {
    "CompilationError",
    "InterpreterError",
    "PTXASError",
    "UnsupportedLanguageConstruct",
}


class TaskRuntimeError(Exception):
    """The task's own code failed: not the candidate's fault, the judge cannot rule."""


def is_compile_error(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(cls.__name__ in _COMPILE_ERROR_TYPES for cls in type(current).__mro__):
            return True
        current = current.__cause__ or current.__context__
    return False


def classify(exc: BaseException, phase: Phase, *, loading: bool) -> Status:
    """``loading``: the exception came from importing the module or building ``ModelNew``."""
    if loading or isinstance(exc, SyntaxError) or is_compile_error(exc):
        return Status.COMPILE_ERROR
    return Status.RUNTIME_ERROR


def describe(exc: BaseException, phase: Phase, own_file: str) -> ErrorDetail:
    """The error with its traceback trimmed to the frames in ``own_file``."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(own_file)]
    if isinstance(exc, SyntaxError) and exc.filename and exc.filename.endswith(own_file):
        location = f"{own_file}:{exc.lineno}"
    elif frames:
        location = f"{own_file}:{frames[-1].lineno}"
    else:
        location = None
    lines = [f"  {own_file}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in frames]
    message = _exception_text(exc)
    return ErrorDetail(
        type=type(exc).__name__,
        message=message,
        phase=phase,
        location=location,
        traceback="\n".join(lines) if lines else None,
    )


def _exception_text(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        text = f"{exc.msg}"
        if exc.text:
            text += f": {exc.text.strip()}"
    else:
        text = str(exc) or repr(exc)
    if len(text) > _MESSAGE_LIMIT:
        text = text[: _MESSAGE_LIMIT // 2] + "\n…\n" + text[-_MESSAGE_LIMIT // 2 :]
    return text


def hint_for(exc_type: str, message: str) -> str:
    lowered = message.lower()
    if "out of memory" in lowered:
        return " The kernel ran out of memory: allocate less, or free temporaries."
    if "file too large" in lowered:
        return (
            " The kernel wrote more than the output limit to stdout/stderr or a file: print less."
        )
    if "illegal memory access" in lowered or "misaligned address" in lowered:
        return " Usually an out-of-bounds load or store: check the masks and pointer offsets."
    if "power of 2" in lowered:
        return (
            " Block sizes given to tl.arange must be powers of two: round up with "
            "triton.next_power_of_2 and mask the tail."
        )
    return ""


SIGNAL_HINTS = {
    "SIGSEGV": "usually an out-of-bounds load or store: check the masks and pointer offsets",
    "SIGBUS": "usually a misaligned or out-of-bounds access",
    "SIGABRT": "an abort in native code, often a failed CUDA or Triton assertion",
    "SIGKILL": "killed from outside, often for using too much memory",
    "SIGFPE": "an arithmetic fault in native code (integer division by zero?)",
}

PHASE_WORDS = {
    Phase.QUEUED: "waiting in the queue",
    Phase.COMPILING: "loading and compiling (first call)",
    Phase.CHECKING: "checking correctness",
    Phase.TIMING: "timing",
    Phase.DONE: "finishing",
}


class Violation(Exception):
    """A named integrity check failed."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"{check}: {detail}")
        self.check = check
        self.detail = detail
