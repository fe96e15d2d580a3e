"""The names of the judge's integrity checks, in one place.

A rejected kernel's result names the check that caught it (``EvalResult.integrity[].check``);
``docs/integrity.md`` says what each one refuses. The source checks raise nothing: they return
findings. Every run-time verdict is decided by the trusted judge process, in
``judge.trusted.integrity``, the only module that raises ``Violation``.
"""

from __future__ import annotations

from enum import StrEnum


class Check(StrEnum):
    # read from the source before any process is spent on it (and again at run time where the
    # candidate's own process can see it happen)
    PROCESS_SPAWN = "process_spawn"
    NETWORK = "network"
    BACKGROUND_THREAD = "background_thread"
    DYNAMIC_CODE = "dynamic_code"
    HARNESS_TAMPERING = "harness_tampering"
    PRECISION_DOWNGRADE = "precision_downgrade"
    FILE_WRITE = "file_write"
    LAUNCH_IN_TRY = "launch_in_try"
    # what the candidate's calls did, as its process reported it (first signals)
    NO_TRITON_KERNEL = "no_triton_kernel"
    TORCH_FALLBACK = "torch_fallback"
    HIDDEN_WORK = "hidden_work"
    LAZY_OUTPUT = "lazy_output"
    OUTPUT_ALIASES_INPUT = "output_aliases_input"
    # what the trusted judge saw for itself
    NO_TRITON_WORK = "no_triton_work"
    RESULT_REUSE = "result_reuse"
    TIMED_OUTPUT = "timed_output"
    IMPOSSIBLE_SPEEDUP = "impossible_speedup"


class Violation(Exception):
    """A named integrity check failed: the kernel is rejected, with ``detail`` as the reason."""

    def __init__(self, check: Check, detail: str) -> None:
        super().__init__(f"{check.value}: {detail}")
        self.check = Check(check)
        self.detail = detail
