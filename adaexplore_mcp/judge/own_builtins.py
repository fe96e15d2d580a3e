"""The builtins as the judge found them, for its modules that run in the candidate's process.

A module's functions look a builtin up in the builtins their module had when they were made.
The kernel shares the process's ``builtins`` module with the judge, and the watch
(``candidate.watch``) sees a builtin replaced only where it is still replaced when it looks: a
kernel's ``bytearray`` that put the original back as the judge's decoder called it, and came
back from a finalizer once the call was over, read every call's inputs outside the recorders
and was never seen. So each such module says, above its functions::

    __builtins__ = own_builtins()

and its functions call the builtins as they were when the judge was imported, whatever a
kernel puts in their place later.
"""

from __future__ import annotations

import builtins
import types


def own_builtins() -> types.ModuleType:
    """A copy of the builtins module as it is now (a module of its own, not ``builtins``)."""
    copy = types.ModuleType(builtins.__name__, builtins.__doc__)
    vars(copy).update(vars(builtins))
    return copy
