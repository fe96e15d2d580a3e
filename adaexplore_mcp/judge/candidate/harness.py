"""The candidate's process: imports ``kernel.py``, builds ``ModelNew`` and calls it when asked.

It holds no reference, no seed, no tolerance and no verdict: it receives inputs and sends back
what forward returned, with the first signals it saw (``signals``). It runs in the sandbox the
worker set up before it started (``judge.sandbox``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from adaexplore_mcp.judge.candidate.interpreter import emulate_tf32_dots
from adaexplore_mcp.judge.candidate.last_look import last_look
from adaexplore_mcp.judge.candidate.sealing import forget_judge_modules
from adaexplore_mcp.judge.candidate.signals import Monitor
from adaexplore_mcp.judge.errors import KERNEL_FILE, describe_exception
from adaexplore_mcp.judge.own_builtins import own_builtins
from adaexplore_mcp.judge.subject.loading import (
    describe_platform,
    load_module,
    seed,
    start_device,
    synchronize,
    write_source,
)
from adaexplore_mcp.judge.subject.server import (
    Codec,
    Server,
    UserCodeError,
    aliased,
    flatten,
    payload_of,
)
from adaexplore_mcp.judge.subject.weights import fingerprint
from adaexplore_mcp.judge.wire.frames import Channel
from adaexplore_mcp.judge.wire.jobs import ChildJob
from adaexplore_mcp.judge.wire.subject import (
    Answer,
    ArmRequest,
    BuildAnswer,
    BuildRequest,
    CallAnswer,
    CallRequest,
    CompileNote,
    Signals,
    SubjectError,
    request_adapter,
)
from adaexplore_mcp.judge.wire.values import Value

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``

MISSING = SubjectError(
    type="MissingModelNew",
    message="kernel.py defines no `class ModelNew`",
    file=KERNEL_FILE,
)


class CandidateSubject:
    def __init__(self, job: ChildJob, channel: Channel, workdir: str) -> None:
        self.device = start_device(job.device)
        self.code = job.code or ""
        self.channel = channel
        self.workdir = workdir
        self.codec = Codec(self.device)
        self.models: dict[str, Any] = {}
        self.monitor: Monitor | None = None
        self.cls: type | None = None
        self.audit = job.integrity.enabled

    def run(self) -> None:
        if self.device.type == "cpu":
            emulate_tf32_dots()  # before the monitor, which takes Triton as it finds it
        ready = describe_platform(self.device)
        path = write_source(KERNEL_FILE, self.code)
        self.monitor = Monitor(kernel_path=path, workdir=self.workdir, device=self.device)
        self.monitor.install(audit=self.audit)
        # the server, its handlers and its loop are bound before the kernel is imported, and so
        # is the last look it takes before each answer (``candidate.last_look``)
        look = (
            last_look(self.monitor.replaced, self.channel.sock, self.monitor.kept)
            if self.audit
            else None
        )
        server = Server(
            self.channel,
            self.codec,
            {"build": self.build, "call": self.call, "arm": self.arm},
            last_look=look,
        )
        self._server = server
        serve = server.serve
        forget_judge_modules()
        try:
            module = load_module(path, "adaexplore_kernel")
            cls = getattr(module, "ModelNew", None)
            if not isinstance(cls, type):
                ready.error = MISSING
            self.cls = cls
        except BaseException as exc:  # SystemExit and KeyboardInterrupt are the kernel's too
            ready.error = describe_exception(exc, KERNEL_FILE)
        self.monitor.note_glue_changes()
        ready.signals = Signals(
            audit=self.monitor.audit(), precision=self.monitor._precision_changes()
        )
        self.channel.send(ready)
        if ready.error is not None:
            return
        serve()

    def build(self, request: BuildRequest, payload: bytes) -> tuple[Answer, bytes]:
        assert self.cls is not None
        init = self.codec.decode(request.init or [], payload)
        try:
            seed(request.seed, self.device)
            with torch.device(self.device):
                model = self.cls(*init)
            if isinstance(model, torch.nn.Module):
                model = model.to(self.device)
        except BaseException as exc:
            raise UserCodeError(describe_exception(exc, KERNEL_FILE), self._signals()) from None
        self.models[request.variant] = model
        return BuildAnswer(weights=fingerprint(model)), b""

    def _signals(self) -> Signals:
        assert self.monitor is not None
        return Signals(audit=self.monitor.audit())

    def call(self, request: CallRequest, payload: bytes) -> tuple[Answer, bytes]:
        assert self.monitor is not None
        model = self.models[request.variant]
        args: list[Any] = []
        failure: BaseException | None = None
        output: Any = None
        notes = request.compile_notes and self.device.type == "cuda"
        self.monitor.compile_gate[0] = self._outside_lock if notes else None
        # on a GPU the profiled call measures the split of time between Triton and the library,
        # which the poison's fills would add to (the checked calls before it have caught an
        # output left unwritten); on the CPU every call is alike
        poison = request.mode != "profile" or self.device.type == "cpu"
        sent: tuple[list[Value], list[Value] | None, bytes] | None = None
        signals = Signals()
        try:
            with self.monitor.call(request.mode, poison=poison) as signals:
                # the inputs decoded under the recorders: a kernel's hook in the decoder (a
                # ``Tensor.as_strided`` of its own) met each call's fresh inputs there, ran
                # torch's softmax on them and had Triton copy the result
                args = self.codec.decode(request.args, payload)
                try:
                    with torch.no_grad():
                        output = model(*args)
                        synchronize(self.device)
                    # still under the recorders: code of the kernel's that the harness runs as
                    # it sends the outputs back (a Tensor method it replaced) is seen
                    sent = self._send_back(output, args, signals)
                except BaseException as exc:
                    failure = exc
                finally:
                    self.monitor.compile_gate[0] = None
        except Exception as exc:
            # the recorders could not start or stop: forward exhausted the process (a thread
            # bomb left the profiler no memory), and its own error says why; or code of the
            # kernel's ran as the judge's profiler started and threw a switch, refused with an
            # error and an event (a crash of the process would have hidden the event)
            if failure is None:
                raise UserCodeError(describe_exception(exc, KERNEL_FILE), self._signals()) from None
        if isinstance(failure, UserCodeError):
            failure.signals = signals
            raise failure
        if failure is not None or sent is None:
            assert failure is not None
            raise UserCodeError(describe_exception(failure, KERNEL_FILE), signals)
        specs, after, answer_payload = sent
        return CallAnswer(outputs=specs, args_after=after, signals=signals), answer_payload

    def _send_back(
        self, output: Any, args: list[Any], signals: Signals
    ) -> tuple[list[Value], list[Value] | None, bytes]:
        """forward's outputs (and on the CPU its arguments, which the trusted process cannot
        see) encoded for the trusted process."""
        outputs = flatten(output)
        signals.output_kinds = [_kind(value) for value in outputs]
        signals.aliased_input = aliased(outputs, args)
        if signals.aliased_input is not None:  # memory it was lent cannot be lent back: a copy
            outputs[signals.aliased_input] = outputs[signals.aliased_input].clone()
        try:
            encoder = self.codec.encoder()
            specs = encoder.encode_all(outputs)
            after = encoder.encode_all(args) if self.device.type == "cpu" else None
            return specs, after, payload_of(encoder)
        except BaseException as exc:  # a tensor with no storage, or one the GPU cannot share
            error = describe_exception(exc, KERNEL_FILE)
            error.message = f"the output could not be sent to the judge: {error.message}"
            raise UserCodeError(error, signals) from None

    def _outside_lock(self, compile: Callable[[], Any]) -> Any:
        """One Triton compile, told to the trusted process before and after: it lets the GPU
        lock go meanwhile, and this process launches nothing until it holds it again."""
        self.channel.send(CompileNote(done=False))
        try:
            return compile()
        finally:
            self.channel.send(CompileNote(done=True))
            self.channel.receive(request_adapter)  # ResumeRequest

    def arm(self, request: ArmRequest, payload: bytes) -> tuple[Answer, bytes]:
        assert self.monitor is not None
        model = self.models[request.variant]
        failure: BaseException | None = None
        answer: tuple[Answer, bytes] | None = None
        signals = Signals()
        try:
            with self.monitor.call("timed", poison=False) as signals:  # run as they are
                try:
                    with torch.no_grad():
                        answer = self._server.arm(
                            request, payload, lambda args: model(*args), signals
                        )
                except BaseException as exc:
                    failure = exc
        except Exception as exc:  # the recorders could not start or stop (``call``)
            if failure is None:
                raise UserCodeError(describe_exception(exc, KERNEL_FILE), self._signals()) from None
        if failure is not None or answer is None:
            assert failure is not None
            raise UserCodeError(describe_exception(failure, KERNEL_FILE), signals)
        return answer


def _kind(value: Any) -> str | None:
    """None for a plain tensor; otherwise what stands in its place."""
    if not isinstance(value, torch.Tensor):
        return None
    if type(value) is not torch.Tensor and not isinstance(value, torch.nn.Parameter):
        return f"tensor subclass {type(value).__name__[:100]}"
    if value.is_meta:
        return "meta tensor"
    return None
