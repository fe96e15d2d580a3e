"""Candidate kernels for the benchmarks: a realistic mix built from a bundled solution.

An agent's stream of kernels is mostly compiling, often wrong: each task gets its solution, a
second correct variant (distinct source, so nothing is cached), one that computes wrong values,
one that does not compile and one that fails at run time.
"""

from __future__ import annotations

from adaexplore_mcp.tasks import bundled_solution

_WRAP = """

_adaexplore_forward = ModelNew.forward


def _adaexplore_wrapped(self, *args):
{body}


ModelNew.forward = _adaexplore_wrapped
"""

_SCALE_OUTPUT = """    out = _adaexplore_forward(self, *args)
    if isinstance(out, (tuple, list)):
        return type(out)(o * 1.5 if o.is_floating_point() else o + 1 for o in out)
    return out * 1.5 if out.is_floating_point() else out + 1"""

_COMPILE_ERROR = """    _adaexplore_bad_kernel[(1,)](args[0])
    return _adaexplore_forward(self, *args)"""

_BAD_KERNEL = """

@triton.jit
def _adaexplore_bad_kernel(x_ptr):
    offsets = tl.arange(0, 100)  # not a power of two: does not compile
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets))
"""

_RUNTIME_ERROR = """    out = _adaexplore_forward(self, *args)
    raise RuntimeError("the kernel's bookkeeping failed after the launch")"""


def candidates(task_name: str) -> dict[str, str]:
    solution = bundled_solution(task_name)
    if solution is None:
        raise ValueError(f"{task_name} has no bundled solution")
    return {
        "solution": solution,
        "variant": "# a second, independently submitted copy\n" + solution,
        "incorrect": solution + _WRAP.format(body=_SCALE_OUTPUT),
        "compile_error": solution + _BAD_KERNEL + _WRAP.format(body=_COMPILE_ERROR),
        "runtime_error": solution + _WRAP.format(body=_RUNTIME_ERROR),
    }
