"""The one error for a path that cannot be used as a run directory."""

from __future__ import annotations

# The status a command ends with for it: the user gave a path (or options) that do not fit.
EXIT_USAGE = 2


class RunDirError(ValueError):
    """A run directory cannot be read, created or resumed as asked; the message says what to
    do next."""

    exit_code = EXIT_USAGE
