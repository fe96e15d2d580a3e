"""Why a profile did not come: the profiler is not usable here, or this run of it failed."""

from __future__ import annotations


class ProfileError(Exception):
    """A profile that did not come; the message says what to do next."""


class ProfilerUnavailable(ProfileError):
    """Nsight Compute or a GPU is missing: the operator must install or configure it."""


class ProfileFailed(ProfileError):
    """ncu ran and failed, timed out, or recorded nothing; the message carries its output's
    tail."""
