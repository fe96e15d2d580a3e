"""The context a rule or a performance lesson holds for: the precision policy, the operator policy
and the GPU architecture it was learned under, each None when it holds whatever that setting is.

A search has a context too (its policies and the GPU its kernels ran on). An entry contradicts a
search when one of its settings is known on both sides and differs: the starter rule telling
the agent to pass ``input_precision="ieee"`` holds under ``strict`` and is wrong under ``tf32``,
where it makes a GEMM about ten times slower.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from adaexplore_mcp.judge.policy import Ops, Precision


class MemoryContext(BaseModel, frozen=True):
    precision: Precision | None = Field(
        default=None, description="The precision policy it holds under; None: any."
    )
    ops: Ops | None = Field(default=None, description="The operator policy; None: any.")
    gpu_arch: str | None = Field(
        default=None, description="The GPU architecture, e.g. 'sm_90'; None: any."
    )

    def contradicts(self, search: MemoryContext | None) -> bool:
        """True when this entry was learned under a setting the search does not have."""
        if search is None:
            return False
        return any(
            mine is not None and theirs is not None and mine != theirs
            for mine, theirs in (
                (self.precision, search.precision),
                (self.ops, search.ops),
                (self.gpu_arch, search.gpu_arch),
            )
        )

    def widened(self, other: MemoryContext) -> MemoryContext:
        """What holds for both: a setting the two disagree on (or either leaves open) is any."""
        return MemoryContext(
            precision=self.precision if self.precision == other.precision else None,
            ops=self.ops if self.ops == other.ops else None,
            gpu_arch=self.gpu_arch if self.gpu_arch == other.gpu_arch else None,
        )

    def label(self) -> str:
        """How an answer names it: 'tf32, triton, sm_90', or 'any' when nothing is known."""
        parts = [str(part) for part in (self.precision, self.ops, self.gpu_arch) if part]
        return ", ".join(parts) or "any"


ANY = MemoryContext()


def gpu_arch_of(capability: str | None, *, interpreter: bool) -> str | None:
    """A device's architecture as the memory names it ('sm_90'); None for Triton's CPU
    interpreter, whose lessons are about the language and hold on every GPU."""
    if interpreter or not capability:
        return None
    return "sm_" + capability.replace(".", "")


def failure_context(
    verdict: str | None, precision: Precision | None, ops: Ops | None, gpu_arch: str | None
) -> MemoryContext:
    """The context a rule distilled from one failure holds for. A policy is kept only when it
    decides that verdict: the tolerance decides a wrong result (``incorrect``), the operator
    policy an integrity rejection (``rejected``); a compile or runtime error is the same under
    every policy. The GPU is kept for a failure on a GPU (not the interpreter)."""
    return MemoryContext(
        precision=precision if verdict == "incorrect" else None,
        ops=ops if verdict == "rejected" else None,
        gpu_arch=None if gpu_arch == "interpreter" else gpu_arch,
    )
