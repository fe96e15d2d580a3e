"""The local judge: a pool of warm workers per device behind one async interface.

    async with LocalJudge(settings.judge, home=settings.home, store=store) as judge:
        result = await judge.evaluate(task, code)

Each device has a bounded queue and ``workers_per_device`` warm workers; a request goes to the
device it names, or to the least busy one. Candidate code only ever runs in a worker's
short-lived child, never in this process.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import re
import time
import uuid
from pathlib import Path
from typing import Unpack

from adaexplore_mcp.judge.devices import (
    GpuInfo,
    ProbeReport,
    nvidia_driver_present,
    parse_device_spec,
)
from adaexplore_mcp.judge.exceptions import JudgeError, JudgeUnavailable
from adaexplore_mcp.judge.outcomes import eval_result, report_body
from adaexplore_mcp.judge.policy import Ops, Precision
from adaexplore_mcp.judge.pool.baselines import Baseline, BaselineCache, add_speedups
from adaexplore_mcp.judge.pool.lane import Lane, LaneStatus, Pending
from adaexplore_mcp.judge.pool.worker_handle import WorkerDied, WorkerHandle
from adaexplore_mcp.judge.request import EvalOptions
from adaexplore_mcp.judge.result import EvalResult, LintReport, Phase, ProgressCallback
from adaexplore_mcp.judge.sandbox.limits import package_pythonpath, scrubbed_environment
from adaexplore_mcp.judge.settings import MAX_TIMEOUT_S, JudgeSettings
from adaexplore_mcp.judge.static_checks import precheck
from adaexplore_mcp.judge.wire.jobs import (
    ChildJob,
    ChildOutcome,
    JobMessage,
    PhaseMessage,
)
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task, TaskError

log = logging.getLogger(__name__)


class LocalJudge:
    def __init__(self, settings: JudgeSettings, *, home: Path, store: Store | None = None) -> None:
        self.settings = settings
        self.home = Path(home)
        self._lanes: list[Lane] = []
        self._starting = asyncio.Lock()
        self._baselines = BaselineCache(store, calls_per_gate=settings.timing.calls_per_gate)
        self.probe: ProbeReport | None = None

    async def __aenter__(self) -> LocalJudge:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def devices(self) -> list[str]:
        return [lane.device for lane in self._lanes]

    def lanes_status(self) -> list[LaneStatus]:
        """Each device's queue and workers, as they are now."""
        return [lane.status() for lane in self._lanes]

    async def start(self) -> None:
        """Starts the workers; a judge already started is left as it is, so a caller that
        was lent a running judge may call this without leaking a second pool."""
        async with self._starting:
            if not self._lanes:
                await self._start()

    async def _start(self) -> None:
        spec = parse_device_spec(self.settings.device)
        lanes: list[Lane] = []
        probe_needed = spec.kind == "cuda" or (spec.kind == "auto" and nvidia_driver_present())
        if probe_needed:
            self.probe = await self._probe()
            gpus = [g for g in self.probe.gpus if spec.indices is None or g.index in spec.indices]
            missing = set(spec.indices or ()) - {g.index for g in gpus}
            if missing or (spec.kind == "cuda" and not gpus):
                seen = ", ".join(f"cuda:{g.index} ({g.name})" for g in self.probe.gpus) or "none"
                raise JudgeUnavailable(
                    f"device {self.settings.device!r} is not available (GPUs visible: {seen}); "
                    "use --device cpu for Triton's CPU interpreter"
                )
            lanes = [self._gpu_lane(gpu) for gpu in gpus]
        if not lanes:
            lanes = [Lane("cpu", self._worker_env(cpu=True), self.settings, None, None)]
        try:
            await asyncio.gather(*(lane.start() for lane in lanes))
        except BaseException:
            await asyncio.gather(*(lane.close() for lane in lanes))
            raise
        self._lanes = lanes

    def _gpu_lane(self, gpu: GpuInfo) -> Lane:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        physical = visible.split(",")[gpu.index].strip() if visible else str(gpu.index)
        env = self._worker_env(cpu=False, visible=physical)
        locks = self.home / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        lock = str(locks / ("gpu-" + re.sub(r"[^A-Za-z0-9_-]", "_", gpu.uuid)))
        return Lane(f"cuda:{gpu.index}", env, self.settings, gpu, lock)

    def _worker_env(self, *, cpu: bool, visible: str | None = None) -> dict[str, str]:
        extra = {
            "PYTHONPATH": package_pythonpath(),
            "HOME": os.environ.get("HOME", str(self.home)),
            "PYTHONNOUSERSITE": "1",
            # hidden from user code: the judge's data (its database among it), the user's home
            "ADAEXPLORE_PRIVATE_DIRS": os.pathsep.join(
                str(p) for p in (self.home, os.environ.get("HOME")) if p
            ),
        }
        env = scrubbed_environment(dict(os.environ), extra)
        env.pop("TRITON_INTERPRET", None)
        if cpu:
            env |= {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
        elif visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible
        return env

    async def _probe(self) -> ProbeReport:
        env = self._worker_env(cpu=False)
        handle = WorkerHandle("probe", env)
        try:
            await handle.start()
            job = JobMessage(id="probe", timeout_s=120, child=ChildJob(kind="probe", device="cpu"))
            outcome = await handle.run(job, None, asyncio.Event())
        except WorkerDied as exc:
            raise JudgeUnavailable(str(exc)) from exc
        finally:
            await handle.stop()
        return ProbeReport.model_validate(report_body(outcome, "probe", None))

    def _lane(self, device: str | None) -> Lane:
        if not self._lanes:
            raise JudgeUnavailable("the judge is not started (use `async with LocalJudge(...)`)")
        if device is None:
            return min(self._lanes, key=lambda lane: lane.load)
        for lane in self._lanes:
            if lane.device == device:
                return lane
        raise JudgeUnavailable(
            f"this judge has no device {device!r}; it has {', '.join(self.devices)}"
        )

    def _job(
        self,
        kind: str,
        lane: Lane,
        task: Task,
        code: str | None = None,
        precision: Precision = Precision.STRICT,
        ops: Ops = Ops.TRITON,
    ) -> ChildJob:
        return ChildJob(
            kind=kind,  # type: ignore[arg-type]
            task=task,
            code=code,
            device=lane.device,
            trials=self.settings.trials,
            odd_trials=self.settings.odd_trials,
            tolerances=self.settings.tolerances,
            precision=precision,
            ops=ops,
            timing=lane.timing,
            integrity=self.settings.integrity,
            sandbox=self.settings.sandbox,
            gpu_lock=lane.lock,
            output_limit_bytes=self.settings.output_limit_mb * 2**20,
            cache_dir=str(self.home / "cache" / "baselines" / task.hash)
            if kind == "baseline"
            else None,
            peaks=dict(lane.peaks),
        )

    async def _submit(
        self, lane: Lane, child: ChildJob, timeout_s: float, on_progress: ProgressCallback | None
    ) -> tuple[ChildOutcome, float]:
        loop = asyncio.get_running_loop()
        started = time.monotonic()

        def relay(message: PhaseMessage) -> None:
            if on_progress is not None:
                on_progress(message.phase, time.monotonic() - started)

        pending = Pending(
            message=JobMessage(id=uuid.uuid4().hex, timeout_s=timeout_s, child=child),
            future=loop.create_future(),
            on_phase=relay,
        )

        def on_done(future: asyncio.Future) -> None:
            if future.cancelled():
                pending.cancelled.set()

        pending.future.add_done_callback(on_done)
        lane.submit(pending)
        if on_progress is not None:
            on_progress(Phase.QUEUED, 0.0)
        outcome = await pending.future
        queue_s = (pending.started or time.monotonic()) - pending.enqueued
        return outcome, queue_s

    async def evaluate(
        self,
        task: Task,
        code: str,
        *,
        with_speedups: bool = True,
        **options: Unpack[EvalOptions],
    ) -> EvalResult:
        """Judge one candidate under a precision and an operator policy (default: the
        settings'). Always a verdict; raises only when the judge itself cannot run
        (``JudgeError``, ``QueueFull``) or the task is broken (``TaskError``). Without
        ``with_speedups`` a correct kernel's runtime is not compared with the baselines (a
        caller that caches baselines for several judges adds them)."""
        policy = Precision(options.get("precision") or self.settings.precision)
        operators = Ops(options.get("ops") or self.settings.ops)
        timeout = _checked_timeout(options.get("timeout_s"), self.settings.timeout_s)
        early = precheck(task, code)
        if early is not None:
            return _labelled(early, policy, operators)
        lane = self._lane(options.get("device"))
        job = self._job("eval", lane, task, code, policy, operators)
        outcome, queue_s = await self._submit(lane, job, timeout, options.get("on_progress"))
        result = eval_result(outcome, task, code, timeout)
        result = _labelled(result, policy, operators)
        light = result.timing.speed_of_light if result.timing is not None else None
        if light is not None:
            lane.note_peak(light.peak_math, light.peak_tflop_s)
        result.phases.queue_s = queue_s
        if with_speedups and result.ok and result.runtime is not None and lane.gpu is not None:
            await self._add_speedups(result, task, lane, policy, operators)
        return result

    async def _add_speedups(
        self, result: EvalResult, task: Task, lane: Lane, policy: Precision, operators: Ops
    ) -> None:
        try:
            baseline = await self.baseline(
                task, device=lane.device, precision=policy, ops=operators
            )
        except JudgeError as exc:
            log.warning("no baseline for %s on %s: %s", task.name, lane.device, exc)
            return
        add_speedups(result, baseline)

    async def baseline(
        self,
        task: Task,
        *,
        device: str | None = None,
        precision: Precision | None = None,
        ops: Ops | None = None,
    ) -> Baseline:
        """The task's eager and torch.compile timings on a GPU under a precision policy (TF32
        on for ``tf32``), cached in the store per task, GPU, versions and both policies."""
        policy = Precision(precision or self.settings.precision)
        operators = Ops(ops or self.settings.ops)
        lane = self._lane(device)
        if lane.gpu is None or lane.ready is None:
            raise JudgeError("baselines are timed on a GPU; this device is the CPU interpreter")

        async def measure() -> Baseline:
            timeout = self.settings.baseline_timeout_s
            job = self._job("baseline", lane, task, precision=policy)
            outcome, _ = await self._submit(lane, job, timeout, None)
            measured = Baseline.model_validate(report_body(outcome, "baseline", task, timeout))
            return measured.model_copy(update={"precision": policy, "ops": operators})

        return await self._baselines.get(
            task,
            device_name=lane.device_name,
            torch=lane.ready.torch,
            triton=lane.ready.triton,
            precision=policy,
            ops=operators,
            measure=measure,
        )

    async def lint(self, task: Task, *, device: str | None = None) -> LintReport:
        """The task's lint (``judge.trusted.lint``); the task runs in its sandboxed process."""
        lane = self._lane(device)
        timeout = self.settings.timeout_s
        outcome, _ = await self._submit(lane, self._job("lint", lane, task), timeout, None)
        try:
            return LintReport.model_validate(report_body(outcome, "lint", task, timeout))
        except (JudgeError, TaskError) as exc:
            return LintReport(
                task=task.name, task_hash=task.hash, variants=[], findings=[], error=str(exc)
            )

    def versions(self) -> dict[str, str]:
        ready = next((lane.ready for lane in self._lanes if lane.ready), None)
        return (
            {"torch": ready.torch, "triton": ready.triton, "python": ready.python} if ready else {}
        )

    async def close(self) -> None:
        lanes, self._lanes = self._lanes, []
        await asyncio.gather(*(lane.close() for lane in lanes))


def _checked_timeout(timeout_s: float | None, default: float) -> float:
    """A finite, positive limit of at most a day; anything else is the caller's mistake (an
    endless limit would blame the kernel for the judge's overflow)."""
    if timeout_s is None:
        return default
    if not (isinstance(timeout_s, int | float) and math.isfinite(timeout_s) and timeout_s > 0):
        raise ValueError(
            f"timeout_s must be a positive, finite number of seconds, not {timeout_s!r}"
        )
    if timeout_s > MAX_TIMEOUT_S:
        raise ValueError(f"timeout_s may be at most {MAX_TIMEOUT_S:g} s, not {timeout_s:g}")
    return float(timeout_s)


def _labelled(result: EvalResult, policy: Precision, operators: Ops) -> EvalResult:
    """The result with its policies, each named in the message unless it is the default:
    numbers judged under tf32, legacy or mixed must not pass for strict, triton-only ones."""
    result.precision = policy
    result.ops = operators
    labels = [f"{policy.value} precision"] if policy is not Precision.STRICT else []
    if operators is not Ops.TRITON:
        labels.append(f"{operators.value} ops")
    if labels:
        result.message = f"[{', '.join(labels)}] {result.message}"
    return result
