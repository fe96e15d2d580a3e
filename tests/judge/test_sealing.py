"""What the judge leaves where a kernel can reach it leads nowhere else (``candidate.sealing``):
the exploits ``judge_module_patched_*``, ``torch_in_a_range_named_from_a_closure`` and
``judge_state_searched_for_from_every_object`` went through the judge's modules and closures."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from adaexplore_mcp.judge.candidate.sealing import sealed

from .exploits import NO_AUDITED_STEP

HELPER = 41


def _adds(value, extra, /):
    return value + extra


def _with_a_global(value):
    return value + HELPER


def _keyword(*args, _judge_offset, **kwargs):
    return sum(args) + _judge_offset


def test_a_sealed_function_has_no_globals_but_the_builtins_and_keeps_its_defaults():
    adds = sealed(_adds, defaults=(1,))
    assert adds(2) == 3
    assert adds.__closure__ is None
    assert set(adds.__globals__) == {"__builtins__"}
    keyword = sealed(_keyword, kwdefaults={"_judge_offset": 10})
    assert keyword(1, 2) == 13
    assert keyword.__qualname__ == "_keyword"


def test_a_function_that_needs_its_modules_globals_or_a_closure_cannot_be_sealed():
    with pytest.raises(ValueError, match="HELPER"):
        sealed(_with_a_global)
    offset = 3

    def closing(value):
        return value + offset

    with pytest.raises(ValueError, match="offset"):
        sealed(closing)


# Runs in a process of its own: the monitor's install cannot be undone. ``_children`` is the
# search's step, the exploit ``judge_state_searched_for_from_every_object``'s too.
REACH = NO_AUDITED_STEP + textwrap.dedent(
    """
    import collections, os, signal, sys, tempfile, threading


    def reached(roots, targets):
        seen, queue, found = set(), collections.deque(roots), {}
        while queue:
            path, value = queue.popleft()
            if id(value) in seen:
                continue
            seen.add(id(value))
            name = targets.get(id(value))
            if name is None and isinstance(value, str) and value.startswith("adaexplore."):
                name = "a range name"
            if name is not None and name not in found:
                found[name] = path
            try:
                queue.extend((path + label, child) for label, child in _children(value))
            except Exception:
                pass
        return found


    def main():  # its imports in its frame: this script is the main module
        import torch
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

        from adaexplore_mcp.judge.candidate.sealing import forget_judge_modules
        from adaexplore_mcp.judge.candidate.signals import Monitor

        workdir = tempfile.mkdtemp()
        kernel = os.path.join(workdir, "kernel.py")
        open(kernel, "w").close()
        monitor = Monitor(kernel_path=kernel, workdir=workdir, device=torch.device("cpu"))
        monitor.install(audit=False)
        # kept alive: a dict freed once its module left sys.modules would leave its id to another
        judges = {name: m for name, m in sys.modules.items() if name.startswith("adaexplore_mcp")}
        targets = {id(module.__dict__): name for name, module in judges.items()}
        targets[id(monitor.events)] = "the audit record"
        targets[id(monitor)] = "the monitor"
        forget_judge_modules()
        roots = [(f"sys.modules[{name!r}]", module) for name, module in sys.modules.items()]
        roots += [(f"thread {thread.name}", thread) for thread in threading.enumerate()]
        roots += [
            (f"signal {number}", signal.getsignal(number)) for number in signal.valid_signals()
        ]
        with monitor.call("check"):
            stack = _get_current_dispatch_mode_stack()
            found = reached(roots + [("the dispatch modes", stack)], targets)
        for name, path in sorted(found.items()):
            print(f"{name}: {path[:400]}")


    main()
    """
)


def test_nothing_of_the_judges_is_reached_from_what_a_kernel_can_reach():
    """From every module, thread and signal handler, and from the dispatch modes during a call,
    through what no audit event covers: none of the judge's modules, its audit record or its
    range names (the process's main module here is this script, which holds the monitor only
    in a frame)."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run(
        [sys.executable, "-c", REACH], capture_output=True, text=True, timeout=240, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "", done.stdout
