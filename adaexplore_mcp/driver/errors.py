"""Errors that stop a run. Each carries the exit status ``adaexplore-mcp drive`` ends with and a
message that says what to do next; the steps finished before it are all recorded."""

from __future__ import annotations

from adaexplore_mcp.rundir import RunDirError

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_JUDGE = 3


class DriveError(Exception):
    """A run cannot start or go on."""

    exit_code = EXIT_FAILED


class RunMismatch(DriveError):
    """``--resume`` with options that differ from the run's ``run.json``."""

    exit_code = EXIT_USAGE


class ModelRefused(DriveError):
    """The provider refused the key or its permissions: no later step would fare better."""

    exit_code = EXIT_USAGE


class ModelFailing(DriveError):
    """Too many steps in a row ended with the model unavailable."""


class JudgeUnreachable(DriveError):
    """The judge cannot evaluate: nothing more can be judged."""

    exit_code = EXIT_JUDGE


def first_error(errors: BaseExceptionGroup) -> BaseException:
    """The error to report from a task group's: a ``DriveError`` or ``RunDirError`` if any (the
    workers that were cancelled because of it only add noise), else the first."""
    leaves: list[BaseException] = []

    def walk(group: BaseExceptionGroup) -> None:
        for exc in group.exceptions:
            if isinstance(exc, BaseExceptionGroup):
                walk(exc)
            else:
                leaves.append(exc)

    walk(errors)
    return next((exc for exc in leaves if isinstance(exc, (DriveError, RunDirError))), leaves[0])
