"""What the trusted process asks of the processes that run user code, and what they answer.

A *subject* is a sandboxed process that runs a module's ``forward`` when asked: the candidate's
(``ModelNew``) or the task's (``Model``, timed for the baselines). The task's process also builds
inputs from seeds it is given and computes the reference. Answers are validated as they arrive;
an answer the trusted process did not ask for ends the job.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from adaexplore_mcp.judge.own_builtins import own_builtins
from adaexplore_mcp.judge.wire.frames import register
from adaexplore_mcp.judge.wire.values import Value
from adaexplore_mcp.tasks.model import ShapeValue

__builtins__ = own_builtins()  # the judge's own: ``judge.own_builtins``


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


# A time a user-code process reports about itself: what the trusted process builds a result
# from must serialize (an infinite one became null in the report, which then failed to parse)
_Time = Annotated[float, Field(ge=0, allow_inf_nan=False)]


# -- requests ----------------------------------------------------------------------------------


class BuildRequest(_Message):
    """Build the module for a shape variant: the task's process calls ``get_init_inputs`` and
    answers them; the candidate's process is given them in ``init``."""

    op: Literal["build"] = "build"
    variant: str
    overrides: dict[str, ShapeValue] = Field(default_factory=dict)
    seed: int
    init: list[Value] | None = None


class InputsRequest(_Message):
    """The task's process: ``get_inputs()`` under ``seed``, kept under ``key``."""

    op: Literal["inputs"] = "inputs"
    variant: str
    overrides: dict[str, ShapeValue] = Field(default_factory=dict)
    seed: int
    key: int
    reference: bool = Field(
        default=False, description="Also compute the reference now and keep it under the key."
    )
    scale: float | None = Field(
        default=None,
        description="Multiply every float32 input tensor by this power of two (exact), in the "
        "set kept here and in the one answered.",
    )


class ReferenceRequest(_Message):
    """The task's process: the reference output on the inputs kept under ``key``."""

    op: Literal["reference"] = "reference"
    key: int
    fresh: bool = Field(default=True, description="Run the model now (False: the one kept).")
    inputs_after: bool = Field(default=False, description="Answer the inputs as they are now.")
    count_flops: bool = Field(
        default=False,
        description="Run the model under torch's FLOP counter and answer the count (``flops``).",
    )


class SetsRequest(_Message):
    """The task's process: ``get_inputs()`` once per seed, each set kept under its key, the
    reference computed and kept too (the sets a timed span needs, in one exchange)."""

    op: Literal["sets"] = "sets"
    variant: str
    overrides: dict[str, ShapeValue] = Field(default_factory=dict)
    seeds: list[int] = Field(max_length=4096)
    keys: list[int] = Field(max_length=4096)
    scales: dict[int, float] = Field(
        default_factory=dict,
        description="By a set's index: multiply its float32 input tensors by this power of two "
        "(as ``InputsRequest.scale``).",
    )


class ExpectedRequest(_Message):
    """The task's process: the kept reference of every key, in one exchange, then forgotten."""

    op: Literal["expected"] = "expected"
    keys: list[int] = Field(max_length=4096)


class ForgetRequest(_Message):
    op: Literal["forget"] = "forget"
    keys: list[int] = Field(default_factory=list, description="Empty: every kept set.")


CallMode = Literal["check", "noop", "profile"]


class CallRequest(_Message):
    """Run forward once on ``args`` and answer its outputs. ``noop``: with every Triton launch
    turned into a no-op; ``profile``: under the profiler."""

    op: Literal["call"] = "call"
    variant: str
    args: list[Value]
    mode: CallMode = "check"
    compiled: bool = Field(default=False, description="The task's torch.compile'd module.")
    compile_notes: bool = Field(
        default=False,
        description="Say when a Triton compile starts and ends (``CompileNote``), and wait for "
        "``ResumeRequest`` before going on: the trusted process lets the GPU lock go meanwhile.",
    )


class Gate(_Message):
    """Two 32-bit words in the trusted process's memory: before each call the subject's stream
    waits until ``gate`` reaches the call's number, and after it writes that number to
    ``done``."""

    ipc: str
    gate_offset: int
    done_offset: int


class ArmRequest(_Message):
    """Enqueue one call of forward per argument list, each behind the gate; answer once
    enqueued. The calls are numbered from ``value``."""

    op: Literal["arm"] = "arm"
    variant: str
    calls: list[list[Value]]
    gate: Gate
    value: int = Field(ge=1)
    compiled: bool = False


class LendRequest(_Message):
    """Allocate ``nbytes`` of this process's own device memory, outside torch's allocator, and
    answer its IPC handle: the trusted process writes a span's inputs there. Memory a process
    allocated itself reads at full speed; memory opened through IPC does not for every access
    pattern (``benchmarks/ipc_memory.py``: +48% on cross_entropy_rows on an H200)."""

    op: Literal["lend"] = "lend"
    nbytes: int = Field(ge=1, le=1 << 40)


class ReleaseRequest(_Message):
    """Drop the outputs of the last armed span."""

    op: Literal["release"] = "release"


class CompileRequest(_Message):
    """The task's process: ``torch.compile`` its module for a variant and run it once."""

    op: Literal["compile"] = "compile"
    variant: str
    args: list[Value]


class ResumeRequest(_Message):
    """After ``CompileNote(done=True)``: the trusted process holds the GPU lock again."""

    op: Literal["resume"] = "resume"


class QuitRequest(_Message):
    op: Literal["quit"] = "quit"


Request = Annotated[
    BuildRequest
    | InputsRequest
    | SetsRequest
    | ExpectedRequest
    | ReferenceRequest
    | ForgetRequest
    | CallRequest
    | ArmRequest
    | LendRequest
    | ReleaseRequest
    | CompileRequest
    | ResumeRequest
    | QuitRequest,
    Field(discriminator="op"),
]
request_adapter: TypeAdapter[Request] = TypeAdapter(Request)


# -- answers -----------------------------------------------------------------------------------


class Frame(_Message):
    line: int
    function: str = Field(max_length=200)
    text: str = Field(default="", max_length=400)


class SubjectError(_Message):
    """User code raised (or the process could not do what was asked)."""

    type: str = Field(max_length=200)
    message: str = Field(max_length=4000)
    frames: list[Frame] = Field(default_factory=list, max_length=50)
    compile_error: bool = Field(default=False, description="Triton refused to compile it.")
    file: str = Field(default="", max_length=200, description="The user file the frames are in.")


class AuditEvent(_Message):
    check: str = Field(max_length=64)
    detail: str = Field(max_length=1000)


class KernelRecord(_Message):
    name: str = Field(max_length=400)
    triton: bool
    launches: int = Field(ge=0)
    us: _Time


class Profile(_Message):
    torch_ops: dict[str, int] = Field(default_factory=dict)
    kernels: list[KernelRecord] = Field(default_factory=list, max_length=200)
    graph_launches: int = Field(default=0, ge=0)  # CUDA graphs replayed (where kernels traced)
    # the host's view, the only one on the CPU, where no kernel shows: time inside Triton's
    # launches, and in torch's outermost operators outside them
    launch_us: _Time = 0.0
    torch_us: _Time = 0.0


class Signals(_Message):
    """What the candidate's process saw of its own calls. A first signal only: that process
    runs the candidate, which could have changed any of it."""

    launches: int = 0
    torch_ops: dict[str, int] = Field(default_factory=dict)
    precision: list[str] = Field(default_factory=list, max_length=20)
    threads: list[str] = Field(default_factory=list, max_length=20)
    native_threads_grew: bool = False
    stream_not_default: bool = False
    audit: list[AuditEvent] = Field(default_factory=list, max_length=20)
    output_kinds: list[str | None] = Field(default_factory=list, max_length=4096)
    aliased_input: int | None = None
    profile: Profile | None = None


class ReadyAnswer(_Message):
    """The process loaded its module (or failed to: ``error``)."""

    kind: Literal["ready"] = "ready"
    error: SubjectError | None = None
    signals: Signals = Field(default_factory=lambda: Signals())
    device_name: str = ""
    capability: str | None = None
    torch: str = ""
    triton: str = ""
    python: str = ""


MAX_PRINTS = 64


class TensorPrint(_Message):
    """One parameter or buffer as built: enough to tell whether two modules built the same
    weights, without sending them. Sums are in float64 over the flattened tensor."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.]{1,200}$")
    buffer: bool = False
    shape: list[Annotated[int, Field(ge=0)]] = Field(max_length=16)
    dtype: str = Field(pattern=r"^[a-z0-9_]{1,32}$")
    sum: float
    sum_sq: float


class WeightPrint(_Message):
    """A module's parameters, then its buffers, in the order the module lists them (the order
    they were registered in), the first ``MAX_PRINTS`` of ``count``."""

    tensors: list[TensorPrint] = Field(max_length=MAX_PRINTS)
    count: int = Field(ge=0)


class BuildAnswer(_Message):
    kind: Literal["built"] = "built"
    init: list[Value] | None = None
    parameter_bytes: int = 0
    weights: WeightPrint | None = Field(
        default=None, description="None where the module's tensors could not be described."
    )


class ValuesAnswer(_Message):
    kind: Literal["values"] = "values"
    values: list[Value]
    inputs_after: list[Value] | None = None
    aliased_input: int | None = Field(
        default=None, description="The reference: the first output sharing an input's memory."
    )
    flops: float | None = Field(
        default=None,
        description="The reference's FLOPs when asked (``count_flops``). The task's process runs "
        "user code: the trusted side checks the number before using it.",
    )


class SetsAnswer(_Message):
    kind: Literal["sets"] = "sets"
    sets: list[list[Value]]


class CallAnswer(_Message):
    kind: Literal["called"] = "called"
    outputs: list[Value]
    args_after: list[Value] | None = None
    signals: Signals = Field(default_factory=Signals)
    host_s: _Time = 0.0


class ArmedAnswer(_Message):
    kind: Literal["armed"] = "armed"
    outputs: list[list[Value]]
    signals: Signals = Field(default_factory=Signals)
    host_s: _Time = 0.0


class LentAnswer(_Message):
    kind: Literal["lent"] = "lent"
    ipc: str = Field(max_length=2 * 64)


class OkAnswer(_Message):
    kind: Literal["ok"] = "ok"


class CompileNote(_Message):
    """Sent during a call with ``compile_notes``: a Triton compile starts (or has ended)."""

    kind: Literal["compile_note"] = "compile_note"
    done: bool


class ErrorAnswer(_Message):
    kind: Literal["error"] = "error"
    error: SubjectError
    signals: Signals = Field(default_factory=Signals)
    task_error: bool = Field(default=False, description="The task's own code failed.")


Answer = Annotated[
    ReadyAnswer
    | BuildAnswer
    | ValuesAnswer
    | SetsAnswer
    | CallAnswer
    | ArmedAnswer
    | LentAnswer
    | OkAnswer
    | CompileNote
    | ErrorAnswer,
    Field(discriminator="kind"),
]
answer_adapter: TypeAdapter[Answer] = TypeAdapter(Answer)


# every message is sent with its serializer as it was when the judge was imported
register(*_Message.__subclasses__())
