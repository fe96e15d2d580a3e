"""The task's process: imports the task, builds inputs from the seeds the trusted process sends,
computes the reference, and (for baselines) runs ``Model`` or its ``torch.compile`` when asked.

The task is user code too: it runs in the same sandbox as a candidate, and it never sees the
candidate, whose process is a different one.

An evaluation's task process may serve the next evaluations of the very same task
(``serve``; the worker decides, ``worker.kept``): its sandbox and CUDA context are kept, the
task's module is imported afresh for every job, and no other task's code ever runs in it.
"""

from __future__ import annotations

import gc
import resource
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch

from adaexplore_mcp.judge.errors import REFERENCE_FILE, describe_exception
from adaexplore_mcp.judge.reference.task_module import TaskModule, parameter_bytes
from adaexplore_mcp.judge.subject.loading import describe_platform, start_device, synchronize
from adaexplore_mcp.judge.subject.server import (
    Codec,
    Server,
    UserCodeError,
    aliased,
    flatten,
    payload_of,
)
from adaexplore_mcp.judge.subject.weights import fingerprint
from adaexplore_mcp.judge.wire.frames import Channel, ChannelClosed
from adaexplore_mcp.judge.wire.ipc import mapped
from adaexplore_mcp.judge.wire.jobs import (
    ChildJob,
    DevicePrepared,
    handed_job_adapter,
    task_identity,
)
from adaexplore_mcp.judge.wire.subject import (
    Answer,
    ArmRequest,
    BuildAnswer,
    BuildRequest,
    CallAnswer,
    CallRequest,
    CompileRequest,
    ExpectedRequest,
    ForgetRequest,
    InputsRequest,
    OkAnswer,
    ReferenceRequest,
    SetsAnswer,
    SetsRequest,
    Signals,
    ValuesAnswer,
)


def serve(
    job: ChildJob,
    channel: Channel,
    each_job: Callable[[], AbstractContextManager[None]] = nullcontext,
) -> None:
    """Jobs of one task in this process: the first, then, while the trusted process ends each
    job cleanly, the worker's next jobs of the same task (an evaluation's task process only).
    The process ends when a job ends any other way, when another task's job would come, or
    when half its CPU-time limit is spent (the limit counts every job's time). ``each_job``
    wraps each job (the profiling diagnostic)."""
    identity = task_identity(job)
    while True:
        with each_job():
            ended_cleanly = Reference(job, channel).run()
        if not ended_cleanly or identity is None or not _cpu_time_to_spare():
            return
        _let_go_of_job()
        try:
            channel.send(DevicePrepared())
            job = channel.receive(handed_job_adapter)[0].job
        except ChannelClosed:
            return  # the worker ended this process's service
        if task_identity(job) != identity:
            return  # never another task's code in a process a task ran in


def _cpu_time_to_spare() -> bool:
    soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
    if soft == resource.RLIM_INFINITY:
        return True
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime < soft / 2


def _let_go_of_job() -> None:
    """What the last job allocated goes back to the GPU before this process waits for the
    next: a kept process holds its context, not its last job's tensors."""
    gc.collect()
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


class Reference:
    def __init__(self, job: ChildJob, channel: Channel) -> None:
        assert job.task is not None
        self.source = job.task.source
        self.device = start_device(job.device)
        self.channel = channel
        self.codec = Codec(self.device)
        self.models: dict[str, Any] = {}
        self.compiled: dict[str, Any] = {}
        self.kept: dict[int, tuple[str, list[Any], Any]] = {}

    def run(self) -> bool:
        """Serve one job; whether it ended cleanly (the trusted process said quit)."""
        ready = describe_platform(self.device)
        try:
            self.task = TaskModule(self.source, self.device)
        except UserCodeError as failure:
            ready.error = failure.error
        self.channel.send(ready)
        if ready.error is not None:
            return False
        server = Server(
            self.channel,
            self.codec,
            {
                "build": self.build,
                "inputs": self.inputs,
                "sets": self.sets,
                "expected": self.expected,
                "reference": self.reference,
                "forget": self.forget,
                "call": self.call,
                "compile": self.compile,
                "arm": self.arm,
            },
        )
        self._server = server
        try:
            return server.serve()
        finally:
            self.codec.forget()

    def build(self, request: BuildRequest, payload: bytes) -> tuple[Answer, bytes]:
        init = self.task.init_inputs(request.variant, request.overrides)
        model = self.task.build(init, request.seed)
        self.models[request.variant] = model
        self.compiled.pop(request.variant, None)
        specs, answer_payload = self.codec.encode(init)
        answer = BuildAnswer(
            init=specs, parameter_bytes=parameter_bytes(model), weights=fingerprint(model)
        )
        return answer, answer_payload

    def inputs(self, request: InputsRequest, payload: bytes) -> tuple[Answer, bytes]:
        values = self.task.inputs(
            request.variant, request.overrides, request.seed, scale=request.scale
        )
        expected = None
        if request.reference:
            expected = self.task.run(self.models[request.variant], _copied(values))
        self.kept[request.key] = (request.variant, values, expected)
        specs, answer_payload = self.codec.encode(values)
        return ValuesAnswer(values=specs), answer_payload

    def sets(self, request: SetsRequest, payload: bytes) -> tuple[Answer, bytes]:
        model = self.models[request.variant]
        encoder = self.codec.encoder()
        sets = []
        for index, (seed, key) in enumerate(zip(request.seeds, request.keys, strict=True)):
            scale = request.scales.get(index)
            values = self.task.inputs(request.variant, request.overrides, seed, scale=scale)
            # the reference runs on a copy: the inputs were sent after it ran, and a reference
            # that changed them in place had the candidate timed on what it made of them
            self.kept[key] = (request.variant, values, self.task.run(model, _copied(values)))
            sets.append(encoder.encode_all(values))
        return SetsAnswer(sets=sets), payload_of(encoder)

    def expected(self, request: ExpectedRequest, payload: bytes) -> tuple[Answer, bytes]:
        encoder = self.codec.encoder()
        sets = [encoder.encode_all(flatten(self.kept[key][2])) for key in request.keys]
        answer_payload = payload_of(encoder)
        self._forgotten = [self.kept.pop(key) for key in request.keys]  # freed after sending
        return SetsAnswer(sets=sets), answer_payload

    def reference(self, request: ReferenceRequest, payload: bytes) -> tuple[Answer, bytes]:
        variant, values, expected = self.kept[request.key]
        flops = None
        if request.count_flops:
            expected, flops = self.task.run_counting(self.models[variant], values)
        elif request.fresh or expected is None:
            expected = self.task.run(self.models[variant], values)
        outputs = flatten(expected)
        encoder = self.codec.encoder()
        specs = encoder.encode_all(outputs)
        after = encoder.encode_all(values) if request.inputs_after else None
        answer = ValuesAnswer(
            values=specs, inputs_after=after, aliased_input=aliased(outputs, values), flops=flops
        )
        return answer, payload_of(encoder)

    def forget(self, request: ForgetRequest, payload: bytes) -> tuple[Answer, bytes]:
        if request.keys:
            for key in request.keys:
                self.kept.pop(key, None)
        else:
            self.kept.clear()
        return OkAnswer(), b""

    def _module(self, variant: str, compiled: bool) -> Any:
        return self.compiled[variant] if compiled else self.models[variant]

    def call(self, request: CallRequest, payload: bytes) -> tuple[Answer, bytes]:
        module = self._module(request.variant, request.compiled)
        args = self.codec.decode(request.args, payload)
        output = self.task.run(module, args)
        specs, answer_payload = self.codec.encode(flatten(output))
        return CallAnswer(outputs=specs), answer_payload

    def compile(self, request: CompileRequest, payload: bytes) -> tuple[Answer, bytes]:
        """torch.compile's failure is the baseline's, not the task's: an ordinary error."""
        args = self.codec.decode(request.args, payload)
        try:
            compiled = torch.compile(self.models[request.variant])
            with torch.no_grad():
                compiled(*args)
            synchronize(self.device)
        except Exception as exc:
            raise UserCodeError(describe_exception(exc, REFERENCE_FILE)) from None
        self.compiled[request.variant] = compiled
        return OkAnswer(), b""

    def arm(self, request: ArmRequest, payload: bytes) -> tuple[Answer, bytes]:
        module = self._module(request.variant, request.compiled)

        def forward(args: list[Any]) -> Any:
            with torch.no_grad():
                return module(*args)

        with self.task.task_code("running Model.forward"):
            return self._server.arm(request, payload, forward, Signals())


def _copied(values: Any) -> Any:
    """``values`` with every tensor's storage copied and viewed as before, for a reference to
    run on: ``clone`` made an expanded view dense (4 MiB of storage became 4 GiB) and a strided
    one contiguous."""
    return mapped(values, torch.Tensor, _storage_copy)


def _storage_copy(tensor: torch.Tensor) -> torch.Tensor:
    copy = torch.empty(0, dtype=tensor.dtype, device=tensor.device)
    storage = tensor.untyped_storage().clone()
    return copy.set_(storage, tensor.storage_offset(), tensor.size(), tensor.stride())
