"""The results file of a problem set: one JSON record a line, appended as each verdict arrives.

A record names the problem, the kernel file and its hash, the policies it was judged under and
the whole ``EvalResult``. A rerun with the same file skips every kernel whose hash is recorded
under the same policies against the same problem; a killed run loses only the evaluations that
were in flight. Each line is written whole with one ``write`` on an ``O_APPEND`` descriptor; a
last line cut by a crash is ignored when read and closed off before the next one is written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout
from pydantic import BaseModel, Field, ValidationError

from adaexplore_mcp.judge import EvalResult

FORMAT = "adaexplore-set-v1"
# The fields of an EvalResult that are judging policies (precision today, operators when the
# judge has them): carried into every record so results under different policies never mix.
POLICY_FIELDS = ("precision", "ops")

Policies = dict[str, str]


class ResultsFileError(ValueError):
    """A results file that cannot be used as asked; the message says what to do."""


class SetRecord(BaseModel):
    format: str = FORMAT
    problem: str = Field(description="The problem file, relative to the problems directory.")
    kernel: str = Field(description="The kernel file, relative to the kernels directory.")
    kernel_hash: str
    task_hash: str
    policies: Policies = Field(description="precision (and ops, where judged) of this verdict.")
    result: EvalResult
    recorded_at: float = Field(default_factory=time.time)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kernel, self.kernel_hash, self.task_hash)


def policies_of(result: EvalResult) -> Policies:
    """The policy fields the result carries, as plain strings."""
    found = {}
    for name in POLICY_FIELDS:
        value = getattr(result, name, None)
        if value is not None:
            found[name] = str(getattr(value, "value", value))
    return found


def same_policies(recorded: Mapping[str, str], requested: Mapping[str, str]) -> bool:
    """Whether a record was judged under every policy the run asks for (a record that lacks a
    policy the run names was judged before that policy existed, and is judged again)."""
    return all(recorded.get(name) == str(value) for name, value in requested.items())


def read_records(path: Path) -> list[SetRecord]:
    """Every whole record of a results file, in the order they were written."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFileError(f"cannot read {path}: {exc}") from None
    records = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            records.append(SetRecord.model_validate_json(line))
        except ValidationError:
            continue  # a line cut by a crash, or a record of another format
    return records


def done_under(records: list[SetRecord], policies: Mapping[str, str]) -> dict[tuple, SetRecord]:
    """The last record of each (kernel, kernel hash, problem hash) judged under ``policies``."""
    return {record.key: record for record in records if same_policies(record.policies, policies)}


class ResultsWriter:
    """Appends records to a results file that this process holds exclusively."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: SetRecord) -> None:
        line = (record.model_dump_json() + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


@contextmanager
def open_results(path: Path) -> Iterator[ResultsWriter]:
    """The results file, locked against a second run writing it at the same time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path) + ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise ResultsFileError(
            f"another run is writing {path} (it holds {lock.lock_file}); wait for it to finish "
            "or give another --out"
        ) from None
    try:
        _close_cut_line(path)
        yield ResultsWriter(path)
    finally:
        lock.release()


def _close_cut_line(path: Path) -> None:
    # A crash mid-write leaves a line without its newline; the next record must not join it.
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return
            handle.seek(-1, os.SEEK_END)
            last = handle.read(1)
    except FileNotFoundError:
        return
    if last != b"\n":
        with open(path, "ab") as handle:
            handle.write(b"\n")
