"""The judge's settings: where kernels run, how they are checked and timed, the sandbox, the
judge service and its clients (``Settings().judge``, ``.remote``, ``.ray``, ``.service``).

Importable without the judge's heavy modules: only pydantic, the policies and the device
specifications."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from adaexplore_mcp.judge.devices import parse_device_spec
from adaexplore_mcp.judge.policy import Ops, Precision, Tolerance, default_tolerances

MAX_TIMEOUT_S = 86_400.0  # a day: any longer is a mistake (inf, a unit error)


class TimingSettings(BaseModel):
    """How a kernel is timed on a GPU (ignored on the CPU, where timing is not meaningful).

    The trusted process times the candidate's process in spans of several calls, each call on
    fresh inputs, and subtracts the handoff between the two processes' GPU contexts measured by
    a trusted null subject next to each span (``docs/integrity.md``, "The clock")."""

    target_ms: float = Field(
        default=100.0, gt=0, le=60_000, description="Kernel time to accumulate over the spans."
    )
    span_ms: float = Field(
        default=2.0, gt=0, le=10_000, description="Kernel time to aim for in one span."
    )
    min_spans: int = Field(default=5, ge=1, le=1000)
    max_spans: int = Field(
        default=8,
        ge=1,
        le=1000,
        description="Each span's calls run on inputs fresh from the task's process and are all "
        "checked, so spans cost more than the kernel time they measure.",
    )
    min_runs: int = Field(default=30, ge=1, description="Fewest timed calls.")
    max_runs: int = Field(default=400, ge=1, description="Most timed calls.")
    max_calls_per_span: int = Field(
        default=32,
        ge=1,
        le=32,
        description="Each call has a gate of its own, so more calls a span no longer spread one "
        "handoff; they only fill the GPU's queues. At 256 calls the judge's stream held about "
        "1,800 operations and the candidate's 768: their hosts blocked on full queues, and an "
        "honest kernel was taken for one that waits on the GPU.",
    )
    calls_per_gate: int = Field(
        default=1,
        ge=1,
        le=32,
        description="Calls of forward behind one gate, sharing one handoff, for spans whose "
        "calls it divides and whose calls return memory of their own (trusted/gate_groups.py). "
        "For measuring the clock, not for judging: with 4 on an H200 the medians moved 0.24 "
        "µs a call between evaluations instead of 0.58, but read 3-13% faster, the calls after "
        "a gate's first starting on the L2 their predecessor left; and a process served "
        "dishonestly could batch a gate's calls, whose inputs it sees before the first.",
    )
    memory_budget_mb: int | None = Field(
        default=None,
        ge=64,
        description="GPU memory for one span's fresh inputs and outputs (held only while the "
        "candidate is timed, which it is alone); default a tenth of the GPU's (at least 1 GiB).",
    )
    enqueue_timeout_s: float = Field(
        default=2.0,
        gt=0,
        le=600,
        description="How long the candidate's process may take to enqueue a span's calls; a "
        "forward that waits on the GPU itself is timed with its host time after that.",
    )
    fill_allowance_ms: float = Field(
        default=0.05,
        ge=0,
        le=10,
        description="GPU time a span's copy of the inputs may take beyond the calibration's "
        "before the excess is charged to the candidate's calls (work its process did while "
        "its gate was closed). Honest kernels showed up to 0.048 ms on an H200; a kernel can "
        "hide at most this much work a span.",
    )
    settle_quiet_ms: float = Field(
        default=3.0,
        gt=0,
        le=100,
        description="After each span, with the job's processes stopped, the judge waits until "
        "no other process has had a turn on the GPU for this long before it times the null "
        "subject. Longer than the GPU's time slice (about 2 ms on an H100).",
    )
    settle_limit_ms: float = Field(
        default=500.0,
        gt=0,
        le=60_000,
        description="How long the GPU may stay busy after a span's calls with the job's "
        "processes stopped: a kernel that leaves work running longer fails its timing.",
    )
    l2_flush_factor: float = Field(
        default=2.0, ge=1.0, description="The L2 flush buffer is this many times the L2 size."
    )
    null_panel: int = Field(
        default=8,
        ge=0,
        le=32,
        description="New trusted processes a worker starts with its null subject, to measure "
        "where a new GPU context's handoff lies against the null subject's: that offset is "
        "added to every calibration of the worker (0: none). On an H200 the null subjects of "
        "four workers read handoffs up to 2 µs apart, 3% of a 0.07 ms kernel, and new "
        "contexts scattered by 0.5-1.1 µs (sd) around them. Each member is a CUDA context "
        "while the worker starts its trusted process; a GPU where every worker's panel at "
        "once would take over a quarter of its memory (half a GiB a member) gets none.",
    )
    null_panel_rounds: int = Field(
        default=8,
        ge=2,
        le=200,
        description="Rounds in which the null subject and the panel are each timed once.",
    )


class IntegritySettings(BaseModel):
    """The checks that stop a kernel from faking a speedup (``docs/integrity.md``)."""

    enabled: bool = Field(
        default=True,
        description="The checks that a kernel's work is Triton's (first signals from the "
        "candidate's process, the call with Triton's launches disabled, the profiled call). "
        "Turn off only for tests of plain torch kernels and to measure what they cost: the "
        "process boundary, the sandbox, the clock and every output check always apply.",
    )
    speed_of_light_fraction: float = Field(
        default=0.7,
        gt=0,
        le=1,
        description="A kernel faster than this fraction of the time needed to read the task's "
        "inputs and parameters once at the GPU's measured bandwidth is rejected.",
    )


class SandboxSettings(BaseModel):
    """What the operating system enforces on the processes that run user code."""

    # Upper bounds keep every limit one setrlimit takes (a larger one was a traceback blamed on
    # the task); the lower one of memory leaves room for the judge's own setup in the process
    # (at 256 MiB it failed there, and the kernel was blamed)
    memory_limit_mb: int | None = Field(
        default=16384,
        ge=1024,
        le=2**24,
        description="Private writable memory a process may map (RLIMIT_DATA); None for no limit.",
    )
    cpu_time_factor: float = Field(
        default=4.0,
        ge=1,
        le=1000,
        allow_inf_nan=False,
        description="CPU seconds a process may use, as a multiple of its wall-clock limit "
        "(threads add up).",
    )
    max_processes: int = Field(
        default=512,
        ge=16,
        le=2**22,
        description="Processes and threads a process may add to the user's count (RLIMIT_NPROC).",
    )
    cache_limit_mb: int = Field(
        default=4096,
        ge=16,
        le=2**24,
        description="Room for Triton's and torch's caches and temporary files (a size-limited "
        "/tmp of the process's own), apart from the output limit.",
    )
    answer_limit_mb: int = Field(
        default=2048,
        ge=64,
        le=8192,  # a frame's own limit (``wire.frames.MAX_PAYLOAD``)
        description="The most one answer of a user-code process may carry to the trusted "
        "process (tensors on the CPU travel in it), which holds up to twice that while it "
        "copies them out.",
    )
    isolate_network: bool = Field(default=True, description="An empty network namespace.")
    private_filesystem: bool = Field(
        default=True,
        description="A private, read-only view of the filesystem (mount namespace); where none "
        "can be made, writes are confined with Landlock.",
    )
    pid_namespace: bool = Field(
        default=True, description="A PID namespace: no other process visible or reachable."
    )
    allow_processes: bool | None = Field(
        default=None,
        description="Whether user code may start processes (which stay inside the sandbox and "
        "end with it). Default: only on a GPU, where Triton runs ptxas and a C compiler.",
    )
    required: bool = Field(
        default=True,
        description="Refuse to run user code where the filesystem cannot be isolated or system "
        "calls cannot be filtered.",
    )
    cuda_connections: int | None = Field(
        default=2,
        le=32,
        description="CUDA_DEVICE_MAX_CONNECTIONS in the processes that run user code on a GPU: "
        "the hardware queues each new CUDA context gets. Every evaluation makes new contexts, "
        "and with fewer queues they cost less when several are made at once (measured with one "
        "and four: benchmarks/context_churn.py). Two, not one: with one queue, a kernel that "
        "leaves its work on a stream it never joins lets the judge see its call end before the "
        "work does, and gained 7-8% on a 0.07 ms kernel on an H200; with two, four or eight it "
        "read 2.12 ms, 30 times slower. None keeps the driver's default (8).",
    )

    @field_validator("cuda_connections")
    @classmethod
    def _check_cuda_connections(cls, value: int | None) -> int | None:
        if value is not None and value < 2:
            raise ValueError(
                "one hardware queue lets a kernel that leaves its work on a stream of its own "
                "finish its timed calls early (docs/integrity.md, 'The handoff calibration'): "
                "use 2 or more, or null for the driver's default"
            )
        return value


class ProfileSettings(BaseModel):
    """The optional Nsight Compute profile of a kernel (``profile_kernel``, ``adaexplore-mcp
    profile``): informational, never a verdict."""

    ncu: str | None = Field(
        default=None,
        description="The Nsight Compute command line (ncu): a path, or a name looked up on "
        "PATH; default 'ncu' on PATH.",
    )
    timeout_s: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        description="Wall-clock limit of one profile: ncu replays every launch several times.",
    )
    warmup_calls: int = Field(
        default=2,
        ge=1,
        le=100,
        description="Calls of forward before the profiled range (compiling, autotuning, caches).",
    )
    profiled_calls: int = Field(
        default=2, ge=1, le=20, description="Calls of forward inside the profiled range."
    )


class JudgeSettings(BaseModel):
    """The local judge: where kernels run, how hard they are checked, how long they may take."""

    device: str = Field(
        default="auto",
        description="'auto' (every visible GPU, else the CPU interpreter), 'cpu', 'cuda' or "
        "'cuda:0,2' (a list of GPU indices).",
    )
    workers_per_device: int | None = Field(
        default=None,
        ge=1,
        description="Warm worker processes per device; default 4 per GPU, 2 on the CPU.",
    )
    timeout_s: float = Field(
        default=180.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        description="Wall-clock limit per evaluation.",
    )
    baseline_timeout_s: float = Field(
        default=900.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        description="Wall-clock limit for timing a task's baselines.",
    )
    # bounded: a million trials ran out the evaluation's time in the task's process, and the
    # message blamed the task
    trials: int = Field(
        default=3,
        ge=1,
        le=100,
        description="Fresh random input sets on the main shape per evaluation.",
    )
    odd_trials: int = Field(
        default=1, ge=1, le=100, description="Input sets per odd-sized shape variant."
    )
    tolerances: dict[str, Tolerance] = Field(default_factory=default_tolerances)
    output_limit_mb: int = Field(
        default=16,
        ge=1,
        description="What a candidate may print, and write to its working directory (Triton's "
        "and torch's caches are bounded apart, by sandbox.cache_limit_mb).",
    )
    max_queue: int = Field(default=256, ge=1, description="Evaluations waiting per device.")
    reuse_workers: bool = Field(
        default=True,
        description="Keep warm workers between evaluations. False starts a fresh Python process "
        "per evaluation, as the common reference harnesses do (used to benchmark the pool).",
    )
    precision: Precision = Field(
        default=Precision.STRICT,
        description="The precision policy of evaluations that do not name one: strict, tf32 "
        "or legacy.",
    )
    ops: Ops = Field(
        default=Ops.TRITON,
        description="The operator policy of evaluations that do not name one: triton (every "
        "computation in Triton) or mixed (torch's library operators may stay beside Triton "
        "kernels that do real work).",
    )
    timing: TimingSettings = Field(default_factory=TimingSettings)
    integrity: IntegritySettings = Field(default_factory=IntegritySettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    profile: ProfileSettings = Field(default_factory=ProfileSettings)

    @field_validator("device")
    @classmethod
    def _check_device(cls, value: str) -> str:
        parse_device_spec(value)
        return value


RAY_SCHEME = "ray"


def is_ray_address(url: str | None) -> bool:
    """Whether a judge address names a Ray cluster (``ray`` or ``ray://HOST:PORT``) rather
    than a judge service's URL."""
    return url is not None and (url == RAY_SCHEME or url.startswith(RAY_SCHEME + "://"))


class RemoteJudgeSettings(BaseModel):
    """A judge elsewhere used instead of the local pool: a judge service
    (``adaexplore-mcp judge serve``) or a Ray cluster."""

    url: str | None = Field(
        default=None,
        description="A judge service's base URL (http://gpu-box:8765); 'ray' for the Ray "
        "cluster at RAY_ADDRESS (a local one when unset) or 'ray://HOST:PORT' for a Ray "
        "cluster's client server; None for the local pool.",
    )
    token: str | None = Field(default=None, description="Bearer token the service requires.")
    # bounded: an infinite delay, or retries whose doubling delays ran for days, hung a command
    connect_timeout_s: float = Field(default=10.0, gt=0, le=600, allow_inf_nan=False)
    retries: int = Field(
        default=4, ge=0, le=20, description="Retries on connection errors and 503 (queue full)."
    )
    backoff_s: float = Field(
        default=1.0, gt=0, le=60, allow_inf_nan=False, description="First retry delay; doubles."
    )


class ServiceSettings(BaseModel):
    """``adaexplore-mcp judge serve``."""

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    token: str | None = Field(default=None, description="Required as a bearer token when set.")
    max_body_mb: float = Field(default=4.0, gt=0, le=1024, allow_inf_nan=False)
    # a body held open, or sent a byte at a time, kept its memory for as long as the client
    # liked, and requests were not counted: 100 held bodies took the service to 484 MB
    body_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        allow_inf_nan=False,
        description="The most a request's body may take to arrive.",
    )
    max_requests: int = Field(
        default=256,
        ge=1,
        le=100_000,
        description="Requests served at once, those whose bodies are still arriving included; "
        "beyond them the service answers 503 at once.",
    )


class RaySettings(BaseModel):
    """The judge on a Ray cluster (``--judge ray``, ``docs/ray.md``): one actor per GPU, each
    holding a local judge's warm pool. The pool's own settings come from ``JudgeSettings``."""

    actors: int | None = Field(
        default=None,
        ge=1,
        description="Judge actors to place; default one per free GPU of the cluster (two on a "
        "cluster without GPUs, with --device cpu or auto).",
    )
    cpus_per_actor: float = Field(
        default=1.0,
        ge=0,
        description="CPUs Ray reserves for each actor (its workers compile kernels on them).",
    )
    retries: int = Field(
        default=2,
        ge=0,
        description="Times an evaluation whose actor or node died is sent to another actor.",
    )
    max_restarts: int = Field(
        default=3,
        ge=-1,
        description="Times Ray restarts an actor that died (-1: without limit).",
    )
    placement_wait_s: float = Field(
        default=10.0,
        ge=0,
        description="How long to wait for the GPUs (or CPUs) the actors need to be free before "
        "saying that they are not; those of actors just stopped come back within seconds.",
    )
    start_timeout_s: float = Field(
        default=300.0,
        gt=0,
        description="How long the actors may take to be placed and to warm their pools.",
    )
    head_check_s: float = Field(
        default=5.0,
        gt=0,
        description="How often a judge that joined the cluster checks that its head answers. "
        "Two checks missed in a row mean the cluster went away: the judge leaves it before Ray "
        "ends the process (60 s without a head) and says so on its next call.",
    )
    node_home: str | None = Field(
        default=None,
        description="ADAEXPLORE_HOME of the actors on each node (locks, compile caches); "
        "default a directory under the node's temporary directory.",
    )
    namespace: str = Field(default="adaexplore-mcp", description="The Ray namespace joined.")
