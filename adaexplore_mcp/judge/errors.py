"""User code's exceptions: described where they are raised (in the candidate's or the task's
process, as a ``SubjectError``), turned into verdicts and messages by the trusted process."""

from __future__ import annotations

import traceback

from adaexplore_mcp.judge.result import ErrorDetail, Phase, Status
from adaexplore_mcp.judge.wire.subject import Frame, SubjectError

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


def is_compile_error(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(cls.__name__ in _COMPILE_ERROR_TYPES for cls in type(current).__mro__):
            return True
        current = current.__cause__ or current.__context__
    return False


def describe_exception(exc: BaseException, own_file: str) -> SubjectError:
    """The exception, its traceback trimmed to the frames in ``own_file`` (the user's file)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(own_file)]
    # Triton raises its interpreter's and compiler's errors from the one that stopped the
    # kernel's body: the line there, not the launch's, is where the fault is
    cause, depth = exc.__cause__, 0
    while cause is not None and depth < 4 and type(exc).__module__.startswith("triton"):
        frames += [
            f for f in traceback.extract_tb(cause.__traceback__) if f.filename.endswith(own_file)
        ]
        cause, depth = cause.__cause__, depth + 1
    if isinstance(exc, SyntaxError) and exc.filename and exc.filename.endswith(own_file):
        frames = [traceback.FrameSummary(own_file, exc.lineno or 0, "<module>", line="")]
    return SubjectError(
        type=type(exc).__name__[:200],
        message=_exception_text(exc)[:4000],
        frames=[
            Frame(line=f.lineno or 0, function=f.name[:200], text=(f.line or "").strip()[:400])
            for f in frames[-50:]
        ],
        compile_error=is_compile_error(exc),
        file=own_file,
    )


def _exception_text(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        text = f"{exc.msg}"
        if exc.text:
            text += f": {exc.text.strip()}"
    else:
        try:
            text = str(exc) or repr(exc)
        except Exception:  # a hostile __str__
            text = type(exc).__name__
    if len(text) > _MESSAGE_LIMIT:
        text = text[: _MESSAGE_LIMIT // 2] + "\n…\n" + text[-_MESSAGE_LIMIT // 2 :]
    return text


def classify(error: SubjectError, *, loading: bool) -> Status:
    """``loading``: raised while importing the module or building ``ModelNew``."""
    if loading or error.compile_error or error.type == "SyntaxError":
        return Status.COMPILE_ERROR
    return Status.RUNTIME_ERROR


def detail_of(error: SubjectError, phase: Phase) -> ErrorDetail:
    own = error.file or KERNEL_FILE
    location = f"{own}:{error.frames[-1].line}" if error.frames else None
    lines = [f"  {own}:{f.line} in {f.function}: {f.text}" for f in error.frames]
    return ErrorDetail(
        type=error.type,
        message=error.message,
        phase=phase,
        location=location,
        traceback="\n".join(lines) if lines else None,
    )


def hint_for(exc_type: str, message: str) -> str:
    lowered = message.lower()
    if "out of memory" in lowered:
        return " The kernel ran out of memory: allocate less, or free temporaries."
    if "file too large" in lowered or "no space left" in lowered:
        return (
            " The kernel wrote more than its working directory holds (the output limit): "
            "write less."
        )
    if "illegal memory access" in lowered or "misaligned address" in lowered:
        return " Usually an out-of-bounds load or store: check the masks and pointer offsets."
    if "power of 2" in lowered:
        return (
            " Triton's block shapes (tl.arange's range, every dimension of a block, as in "
            "tl.reshape and tl.zeros) must be powers of two: round up with "
            "triton.next_power_of_2 and mask the tail."
        )
    if "operation not permitted" in lowered or "read-only file system" in lowered:
        return (
            " The sandbox refused it: a kernel may not start processes, signal others, or "
            "write outside its working directory."
        )
    return ""


SIGNAL_HINTS = {
    "SIGSEGV": "usually an out-of-bounds load or store: check the masks and pointer offsets",
    "SIGBUS": "usually a misaligned or out-of-bounds access",
    "SIGABRT": "an abort in native code, often a failed CUDA or Triton assertion",
    "SIGKILL": "killed from outside, often for using too much memory",
    "SIGFPE": "an arithmetic fault in native code (integer division by zero?)",
    "SIGSYS": "a system call the sandbox does not allow",
}

PHASE_WORDS = {
    Phase.QUEUED: "waiting in the queue",
    Phase.COMPILING: "loading and compiling (first call)",
    Phase.CHECKING: "checking correctness",
    Phase.TIMING: "timing",
    Phase.DONE: "finishing",
}
