"""The op recorder's count of tensor subclasses: only a subclass with a ``__torch_dispatch__``
of its own runs Python out of the recorder's sight."""

from __future__ import annotations

import pytest
import torch

from adaexplore_mcp.judge.candidate.recorder import OpRecorder, glue_overloads

from . import CPU_AND_CUDA


class _Dispatching(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _counts(*types: type) -> dict[str, int]:
    counts: dict[str, int] = {}
    recorder = OpRecorder(counts, [0], glue_overloads())
    x = torch.ones(3)
    recorder.__torch_dispatch__(torch.ops.aten.clone.default, types, (x,))
    return counts


def test_a_subclass_with_its_own_dispatch_is_counted() -> None:
    assert _counts(_Dispatching) == {"_Dispatching (a tensor subclass)": 1}


def test_plain_tensors_and_parameters_are_not_subclasses() -> None:
    # on a GPU, dispatch names torch.Tensor itself among the types of some calls: every
    # bundled solution was rejected as computing "with a tensor subclass"
    assert _counts(torch.Tensor) == {}
    assert _counts(torch.nn.Parameter, torch.Tensor) == {}


@pytest.mark.parametrize("device", CPU_AND_CUDA)
def test_torchs_glue_calls_only_glue_beneath_it(device):
    """What the profiler sees inside glue must be glue for honest code: an operator that is not
    glue there counts as computed (a kernel the candidate registered for a glue operator)."""
    from torch.profiler import ProfilerActivity, profile

    from adaexplore_mcp.judge.candidate.recorder import top_level_ops

    x = torch.randn(4, 6, device=device)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        x.contiguous(), x.t().contiguous(), x.to(torch.float16), x.t().reshape(24)
        x.split(2), x.chunk(2), x.unbind(0), x.type_as(x.double()), x.expand_as(x)
        (
            torch.zeros(3, device=device),
            torch.full((3,), 2.0, device=device),
        )
        torch.arange(5, device=device), x.new_zeros(3), x[0, 0].item()
        torch.nn.functional.pad(x, (1, 1)), x.movedim(0, 1), x.clone(), x.narrow(0, 0, 2)
        torch.empty_like(x).copy_(x), x.int(), torch.cat([x, x]), torch.stack([x, x])
        x.expand(2, 4, 6).contiguous(), x[:, None], torch.empty(3, device=device).fill_(1).zero_()
    assert top_level_ops(list(prof.events()), [], inside_glue=True) == {}


def test_a_kernel_registered_for_a_glue_operator_is_noticed_while_it_stays():
    from adaexplore_mcp.judge.candidate.recorder import changed_glue, glue_tables

    tables = glue_tables()
    assert changed_glue(tables) is None
    library = torch.library.Library("aten", "IMPL")
    library.impl("clone", lambda self, memory_format=None: torch.softmax(self, -1), "CPU")
    try:
        assert changed_glue(tables) == "aten::clone"
    finally:
        library._destroy()
    assert changed_glue(tables) is None


@pytest.mark.parametrize("device", CPU_AND_CUDA)
def test_the_profilers_results_read_directly_give_what_torchs_parse_gives(device):
    """The calls with no kernels traced read the profiler's results without torch's parse (most
    of a timed span's cost in the candidate's process). What the checks compute must not
    change: operators on every thread, inside and outside a launch's range, one computed
    inside a glue operator, and a range named like an operator."""
    import threading

    from torch.profiler import ProfilerActivity, profile, record_function

    from adaexplore_mcp.judge.candidate.profiler import operator_records, summarize

    ranges = ("judge.launch", "judge.callback", "judge.bench")

    def work() -> None:
        x = torch.randn(64, 64, device=device)
        with record_function("judge.launch"):
            torch.softmax(x @ x, -1).sum().item()
            with record_function("judge.callback"):
                torch.relu(x)
        with record_function("aten::not_an_operator"):
            x.clone()
        (x + 1).contiguous()

    library = torch.library.Library("aten", "IMPL")
    library.impl(
        "clone",
        lambda self, memory_format=None: torch.softmax(self, -1),
        "CUDA" if device == "cuda" else "CPU",
    )
    worker = threading.Thread(target=work)
    kwargs = {}
    try:
        from torch._C._profiler import _ExperimentalConfig

        kwargs["experimental_config"] = _ExperimentalConfig(profile_all_threads=True)
    except (ImportError, TypeError):
        pass
    try:
        with profile(activities=[ProfilerActivity.CPU], **kwargs) as prof:
            work()
            worker.start()
            worker.join()
    finally:
        library._destroy()

    direct = operator_records(prof.profiler.kineto_results)
    parsed = list(prof.events())
    assert summarize(direct, ranges, set()) == summarize(parsed, ranges, set())
    summary = summarize(direct, ranges, set())
    # a softmax on each thread, and one in each clone (the kernel registered for glue)
    assert summary.torch_ops["relu"] == 2 and summary.torch_ops["softmax"] == 4, summary
    assert "not_an_operator" not in summary.torch_ops and summary.launch_us > 0

    def fields(event) -> tuple:
        start, end = event.time_range.start, event.time_range.end
        return (event.name, event.thread, round(start, 3), round(end, 3), event.scope)

    # torch's parse also drops an operator's only child of the same name (aten::sum in
    # aten::sum), which the checks never reach: they read the outermost operators
    assert {fields(e) for e in parsed} <= {fields(e) for e in direct}
    assert len({e.thread for e in direct}) >= 2


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_judges_profiler_reads_a_gpus_kernels_as_torchs_parse_does():
    """The judge's profiler starts Kineto and reads its events itself, with no torch Python on
    the way (a kernel's replacement of torch's ``profile.config`` started it blind): the
    kernels, their names and the operators must read as torch's parse of the same trace."""
    import triton
    import triton.language as tl
    from torch.profiler import ProfilerActivity, profile

    from adaexplore_mcp.judge.candidate.profiler import CallProfiler, summarize
    from adaexplore_mcp.judge.candidate.switches import ProfilerSwitches

    @triton.jit
    def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(y_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=mask), mask=mask)

    ranges = ("judge.launch", "judge.callback", "judge.bench")
    x = torch.randn(256, 256, device="cuda")

    def work() -> None:
        y = torch.empty_like(x)
        double[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        torch.softmax(x @ y, -1)
        torch.cuda.synchronize()

    work()  # compiled before either profile
    judges = CallProfiler(torch.device("cuda"), ranges, ProfilerSwitches([]), kernels=True)
    with judges:
        work()
    ours = judges.report({"double"})
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        work()
    theirs = summarize(list(prof.events()), ranges, {"double"})
    launches = {k.name: (k.launches, k.triton) for k in ours.kernels}
    assert launches == {k.name: (k.launches, k.triton) for k in theirs.kernels}, (ours, theirs)
    assert any(k.triton for k in ours.kernels) and not all(k.triton for k in ours.kernels)
    assert ours.torch_ops == theirs.torch_ops and ours.torch_ops["softmax"] == 1, ours
