"""The judge's own failures: it could not give a verdict, which is never the candidate's fault.

Defined apart from the pool that raises them, so that who only catches them (the MCP server's
error translation, the CLI) does not import the pool.
"""


class JudgeError(RuntimeError):
    """The judge itself could not produce a verdict (not the candidate's fault)."""


class JudgeUnavailable(JudgeError):
    """No worker could be started, or no device matches the request."""


class QueueFull(JudgeError):
    """The device's queue is at its limit; retry later."""
