"""An optional Nsight Compute profile of a kernel: the few decisive metrics of its longest
kernels, for an agent deciding what to change. Informational, never a verdict: the profiled
process runs the task and the candidate in the judge's sandbox, unchecked (``target``), under an
ncu that runs in the same sandbox (``launcher``); ``Profiler`` is the calling side."""

from adaexplore_mcp.judge.profile.errors import ProfileError, ProfileFailed, ProfilerUnavailable
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
