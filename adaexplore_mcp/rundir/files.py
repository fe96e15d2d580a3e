"""Writing run files so that a reader (or a resumed run) never sees half of one, and reading the
event log a crash may have cut short."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from pydantic import BaseModel

from adaexplore_mcp.rundir.layout import RunPaths
from adaexplore_mcp.rundir.records import StepRecord


def write_json(path: Path, model: BaseModel | dict | list) -> None:
    """Writes JSON atomically: a reader (or a resumed run) never sees half a file."""
    text = model.model_dump_json(indent=1) if isinstance(model, BaseModel) else json.dumps(model)
    write_text(path, text + "\n")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    # os.open with 0o666 lets the umask decide the mode, as for any file the user writes;
    # mkstemp would make every run file private (0600).
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def append_event(run_dir: Path, record: StepRecord) -> None:
    """One line in events.jsonl; a line is written whole (O_APPEND, one write)."""
    line = (record.model_dump_json() + "\n").encode()
    fd = os.open(RunPaths(run_dir).events, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_events(run_dir: Path) -> list[StepRecord]:
    """Every step record; a last line cut by a crash is ignored."""
    path = RunPaths(run_dir).events
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                records.append(StepRecord.model_validate_json(line))
            except ValueError:
                continue
    return records
