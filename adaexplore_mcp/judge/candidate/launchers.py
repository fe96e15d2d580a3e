"""Triton's launch path as the candidate's process sees it: which classes launch, the
candidate's callables Triton calls inside a launch, Triton's own benchmarker and launch hooks,
and its compile entry point (``signals.Monitor`` wraps them before the kernel is imported)."""

from __future__ import annotations

import contextlib
import functools
import os
import types
from collections.abc import Callable, Iterator
from typing import Any

import triton

from adaexplore_mcp.judge.candidate.sealing import sealed_entry
from adaexplore_mcp.judge.own_builtins import own_builtins

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

# where Triton's own code lies, its real path: code that names a file there is Triton's
TRITON_DIR = os.path.dirname(os.path.realpath(triton.__file__)) + os.sep

try:  # bound at import: a kernel may put modules of its own in sys.modules
    from triton import knobs
except ImportError:
    knobs = None


def launcher_classes() -> list[tuple[Any, bool]]:
    """(class, counts): launchers counted as launches, and the wrappers around them (autotuner,
    heuristics) whose own torch work is Triton's (the autotuner's benchmarking), not the
    candidate's; the candidate's callables they call are marked apart
    (``candidate_callbacks``)."""
    classes: list[tuple[Any, bool]] = []  # Any: Triton's classes, which ship no types
    with contextlib.suppress(ImportError):
        from triton.runtime.jit import JITFunction

        classes.append((JITFunction, True))
    with contextlib.suppress(ImportError):
        from triton.runtime.interpreter import InterpretedFunction

        classes.append((InterpretedFunction, True))
    with contextlib.suppress(ImportError):
        from triton.runtime.autotuner import Autotuner, Heuristics

        classes += [(Autotuner, False), (Heuristics, False)]
    return classes


@contextlib.contextmanager
def candidate_callbacks(
    launcher: Any, outside: Callable[[Any], Any], benchmark: Callable[[Any], Any]
) -> Iterator[None]:
    """For one run of ``launcher``, the candidate's callables it calls (a heuristic, a pre-run
    hook, the autotuner's user hooks and config pruners, a config's pre-hook) wrapped by
    ``outside``; Triton's own defaults are left as they are, but for the autotuner's own
    benchmarker, wrapped by ``benchmark``."""
    saved: list[tuple[Any, str, Any]] = []

    def swap(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    try:
        values = getattr(launcher, "values", None)
        if isinstance(values, dict):  # Heuristics
            swap(launcher, "values", {key: outside(v) for key, v in values.items()})
        hooks = getattr(launcher, "pre_run_hooks", None)
        if isinstance(hooks, list) and hooks:
            swap(launcher, "pre_run_hooks", [outside(hook) for hook in hooks])
        for name, user_defined in (
            ("pre_hook", "user_defined_pre_hook"),
            ("post_hook", "user_defined_post_hook"),
            ("early_config_prune", None),
            ("perf_model", None),
        ):
            value = getattr(launcher, name, None)
            if callable(value) and (user_defined is None or getattr(launcher, user_defined, False)):
                swap(launcher, name, outside(value))
        for config in getattr(launcher, "configs", None) or []:
            if callable(getattr(config, "pre_hook", None)):
                swap(config, "pre_hook", outside(config.pre_hook))
        if "do_bench" in vars(type(launcher)):  # the Autotuner's, a cached property
            with contextlib.suppress(Exception):  # no benchmarker without a GPU driver
                swap(launcher, "do_bench", benchmark(launcher.do_bench))
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def tritons(function: Any) -> bool:
    """Whether ``function`` is Triton's own code (a function whose code object names a file in
    Triton's package; the candidate's process may not make code objects or functions, nor
    give a function another's code)."""
    if isinstance(function, functools.partial):
        function = function.func
    if not isinstance(function, types.FunctionType):  # an object may say what it likes
        return False
    filename = os.path.realpath(function.__code__.co_filename)
    return filename.startswith(TRITON_DIR)


def launch_hook() -> str | None:
    """Which of Triton's launch hooks is set, if any: code it runs inside every launch, where no
    torch work would be recorded. Nothing in the judge sets one."""
    with contextlib.suppress(AttributeError):
        for name in ("launch_enter_hook", "launch_exit_hook"):
            hook = getattr(knobs.runtime, name, None)
            # one callable or None (Triton 3.6), or a chain of them, empty by default (3.9)
            if getattr(hook, "calls", hook):
                return f"knobs.runtime.{name}"
    return None


def wrap_compiler(gate: list[Callable[[Callable[[], Any]], Any] | None]) -> None:
    """Wrap Triton's compile entry point (``JITFunction`` binds it when it first runs on a
    device): while ``gate[0]`` is set, each compile runs through it, so that it can run while
    the trusted process lets the GPU lock go."""
    try:
        import triton.compiler as compiler
    except ImportError:
        return
    original = compiler.compile
    compile = sealed_entry(_compile, original, gate, _loaded)
    compile.__wrapped__ = original  # type: ignore[attr-defined]
    compiler.compile = compile


def _compile(args, kwargs, original, gate, loaded, /):
    """Sealed (``candidate.sealing``): a kernel reaches it as ``triton.compiler.compile``."""
    outside = gate[0]
    if outside is None:
        return original(*args, **kwargs)
    return outside(lambda: loaded(original(*args, **kwargs)))


def _loaded(kernel: Any) -> Any:
    """The compiled kernel with its launcher built and its module loaded (Triton does both at
    the first launch otherwise: the launcher is a C build, about 0.2 s). A failure here (too
    much shared memory) is raised again, as Triton words it, at that launch."""
    with contextlib.suppress(Exception):
        kernel._init_handles()
    return kernel
