"""An optional Nsight Compute profile of a kernel: the few decisive metrics of its longest
kernels, for an agent deciding what to change. Informational, never a verdict: the profiled
process runs the task and the candidate in the judge's sandbox, unchecked (``target``), under an
ncu that runs in the same sandbox (``launcher``); ``Profiler`` is the calling side.

The names import their module on first use (``adaexplore_mcp.lazy_exports``): the MCP server
declares the tool's answer and errors without loading the profiler and the sandbox."""

from typing import TYPE_CHECKING

from adaexplore_mcp.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from adaexplore_mcp.judge.profile.errors import (
        ProfileError,
        ProfileFailed,
        ProfilerUnavailable,
    )
    from adaexplore_mcp.judge.profile.models import KernelProfile, ProfileReport
    from adaexplore_mcp.judge.profile.profiler import Profiler

__all__ = [
    "KernelProfile",
    "ProfileError",
    "ProfileFailed",
    "ProfileReport",
    "Profiler",
    "ProfilerUnavailable",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "KernelProfile": "models",
        "ProfileError": "errors",
        "ProfileFailed": "errors",
        "ProfileReport": "models",
        "Profiler": "profiler",
        "ProfilerUnavailable": "errors",
    },
)
