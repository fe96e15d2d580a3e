"""Run the failure probes through the judge and merge what it says into the starter evidence.

Every probe in scripts/failure_probes/ is a whole candidate kernel file with one deliberate,
common Triton mistake and a header naming its task, the mistake, the expected verdict and the
cause. Each run judges every probe on one device and writes one record per probe and environment
into adaexplore_mcp/memory/starter/evidence.jsonl, replacing the record of the same id and
environment kind (the CPU interpreter, or one GPU model) and keeping all others. A probe that
passes is recorded too: a mistake that only fails on a GPU compiler shows "correct" on the CPU.

    python scripts/collect_failure_evidence.py --device cpu
    python scripts/collect_failure_evidence.py --device cuda
    python scripts/collect_failure_evidence.py --import-notes --no-probes

--import-notes also converts notes/observed-failures.jsonl (failures seen while writing the
bundled solutions) into records with origin "writing".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PROBE_DIR = REPO / "scripts" / "failure_probes"
EVIDENCE = REPO / "adaexplore_mcp" / "memory" / "starter" / "evidence.jsonl"
NOTES = REPO / "notes" / "observed-failures.jsonl"

_HEADER = re.compile(r"^# Failure probe (\d+) -- task: (\S+)\s*$")
_FIELD = re.compile(r"^# (mistake|expect|cause): ?(.*)$")

# Short names for the failures in notes/observed-failures.jsonl, in file order.
NOTE_SLUGS = [
    "online-softmax-neg-inf-nan",
    "online-logsumexp-neg-inf-nan",
    "head-dim-mask-missing",
    "padded-scores-not-masked",
    "global-not-constexpr",
]


@dataclass
class Probe:
    path: Path
    number: str
    name: str
    task: str
    mistake: str
    expect: str
    cause: str
    code: str

    @property
    def id(self) -> str:
        return f"probe-{self.number}-{self.name.replace('_', '-')}"

    @property
    def gpu_only(self) -> bool:
        return self.expect.startswith("gpu-only")

    def expected_status(self, interpreter: bool) -> str:
        """The verdict the header predicts here: a GPU-only mistake passes in the interpreter;
        "error" means any failing verdict."""
        if self.gpu_only and interpreter:
            return "correct"
        words = self.expect.removeprefix("gpu-only").split()
        return words[0] if words else "?"


def parse_probe(path: Path) -> Probe:
    code = path.read_text(encoding="utf-8")
    lines = code.splitlines()
    header = _HEADER.match(lines[0]) if lines else None
    if header is None:
        raise SystemExit(f"{path.name}: the first line must be '# Failure probe NN -- task: NAME'")
    fields: dict[str, str] = {}
    key = None
    for line in lines[1:]:
        if not line.startswith("#"):
            break
        field = _FIELD.match(line)
        if field:
            key = field.group(1)
            fields[key] = field.group(2).strip()
        elif key is not None and line.startswith("#   "):
            fields[key] += " " + line[1:].strip()
    missing = {"mistake", "expect", "cause"} - fields.keys()
    if missing:
        raise SystemExit(f"{path.name}: header lacks {', '.join(sorted(missing))}")
    number, _, name = path.stem.partition("_")
    if number != header.group(1):
        raise SystemExit(f"{path.name}: the header's number {header.group(1)} differs")
    return Probe(
        path=path,
        number=number,
        name=name,
        task=header.group(2),
        mistake=fields["mistake"],
        expect=fields["expect"],
        cause=fields["cause"],
        code=code,
    )


def load_probes(selected: list[str] | None) -> list[Probe]:
    probes = [parse_probe(p) for p in sorted(PROBE_DIR.glob("[0-9][0-9]_*.py"))]
    if selected:
        numbers = {int(s) for s in selected if s.isdigit()}
        names = set(selected)
        probes = [
            p for p in probes if int(p.number) in numbers or {p.path.stem, p.name, p.id} & names
        ]
        if not probes:
            raise SystemExit(f"no probe matches {', '.join(selected)}")
    return probes


# ---- records ------------------------------------------------------------------------------------


def environment_kind(env: dict[str, Any]) -> str:
    """Records of one id are kept once per kind: the interpreter, or each GPU model."""
    if env.get("interpreter"):
        return "interpreter"
    return f"gpu:{env.get('device_name')}"


def environment_fields(env: Any) -> dict[str, Any]:
    return {
        "interpreter": env.interpreter,
        "device_name": env.device_name,
        "capability": env.capability,
        "torch": env.torch,
        "triton": env.triton,
    }


def result_record(probe: Probe, result: Any, fallback_env: dict[str, Any]) -> dict[str, Any]:
    """One evidence record from the judge's EvalResult. ``judge_precheck``: the verdict came
    from the judge's source checks, before Triton saw the kernel."""
    env = result.environment
    status = result.status.value
    # A passing run keeps the judge's message as its "error" too (the field is always text).
    error_type, error = None, result.message
    if result.error is not None:
        error_type, error = result.error.type, result.error.message
    elif status == "incorrect":
        mismatch = result.correctness.mismatch
        error_type = f"mismatch:{mismatch.kind}" if mismatch is not None else "mismatch"
    elif status != "correct":
        error_type = result.integrity[0].check if result.integrity else status
        flags = "; ".join(f"{f.check}: {f.detail}" for f in result.integrity)
        error = flags or result.message
    return {
        "id": probe.id,
        "task": probe.task,
        "origin": "probe",
        "environment": environment_fields(env) if env is not None else dict(fallback_env),
        "status": status,
        "error_type": error_type,
        "error": error,
        "cause": probe.cause,
        "code": probe.code,
        "judge_precheck": env is None,
    }


def note_status(error_type: str) -> str:
    lowered = error_type.lower()
    if "wrong result" in lowered:
        return "incorrect"
    if "compil" in lowered:
        return "compile_error"
    return "runtime_error"


def note_environment(text: str) -> dict[str, Any]:
    """The notes give their environment as a short text; keep it and map what it states."""
    triton = re.search(r"triton (\d+(?:\.\d+)*)", text)
    gpu = re.search(r"NVIDIA \w+", text)
    return {
        "interpreter": gpu is None,
        "device_name": gpu.group(0) if gpu else "cpu (Triton interpreter)",
        "capability": None,
        "torch": None,
        "triton": triton.group(1) if triton else None,
        "as_recorded": text,
    }


def note_records(path: Path = NOTES) -> list[dict[str, Any]]:
    records = []
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for index, line in enumerate(lines, start=1):
        note = json.loads(line)
        slug = NOTE_SLUGS[index - 1] if index <= len(NOTE_SLUGS) else note["task"]
        records.append(
            {
                "id": f"writing-{index}-{slug}",
                "task": note["task"],
                "origin": "writing",
                "environment": note_environment(note["environment"]),
                "status": note_status(note["error_type"]),
                "error_type": note["error_type"],
                "error": note["error"],
                "cause": note["cause"],
                "code": note["code"],
                "code_is_excerpt": True,
            }
        )
    return records


def merge(path: Path, new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Existing records with new ones replacing those of the same id and environment kind."""
    records: dict[tuple[str, str], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                records[(record["id"], environment_kind(record["environment"]))] = record
    for record in new:
        records[(record["id"], environment_kind(record["environment"]))] = record
    # One id's records together, the interpreter's first.
    order = sorted(records, key=lambda key: (key[0], key[1] != "interpreter", key[1]))
    return [records[key] for key in order]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


# ---- running ------------------------------------------------------------------------------------


def judge_settings(device: str, timeout: float | None) -> Any:
    """Settings as `adaexplore-mcp eval --device D --timeout T` builds them: ADAEXPLORE_* apply,
    except that the judge is always the local one."""
    from adaexplore_mcp.config import Settings

    settings = Settings()
    updates: dict[str, Any] = {"device": device}
    if timeout is not None:
        updates["timeout_s"] = timeout
    judge = settings.judge.model_validate({**settings.judge.model_dump(), **updates})
    remote = settings.remote.model_copy(update={"url": None})
    return settings.model_copy(update={"judge": judge, "remote": remote})


async def run_probes(
    probes: list[Probe], device: str, timeout: float | None
) -> list[tuple[Probe, dict[str, Any]]]:
    """Judge every probe on one device (the first the judge opens on) and make the records."""
    from adaexplore_mcp.judge import LocalJudge
    from adaexplore_mcp.store import Store
    from adaexplore_mcp.tasks import resolve_task

    settings = judge_settings(device, timeout)
    tasks = {p.task: resolve_task(p.task) for p in probes}
    judge = LocalJudge(settings.judge, home=settings.home, store=Store(settings.database_path))
    await judge.start()
    try:
        target = judge.devices[0]
        lane = judge.lanes_status()[0]
        print(f"judging {len(probes)} probes on {target} ({lane.device_name})", file=sys.stderr)
        done = 0

        async def one(probe: Probe) -> tuple[Probe, Any]:
            nonlocal done
            result = await judge.evaluate(
                tasks[probe.task], probe.code, device=target, timeout_s=timeout
            )
            done += 1
            print(
                f"[{done}/{len(probes)}] {probe.id}: {result.status.value}",
                file=sys.stderr,
                flush=True,
            )
            return probe, result

        results = await asyncio.gather(*(one(p) for p in probes))
        versions = judge.versions()
    finally:
        await judge.close()

    # A verdict reached before any process ran (the judge's source checks) has no environment:
    # it gets the one the other probes ran in, on the same device.
    seen = [r.environment for _, r in results if r.environment is not None]
    fallback = (
        environment_fields(seen[0])
        if seen
        else {
            "interpreter": lane.gpu is None,
            "device_name": lane.device_name,
            "capability": lane.gpu.capability if lane.gpu else None,
            "torch": versions.get("torch"),
            "triton": versions.get("triton"),
        }
    )
    return [(probe, result_record(probe, result, fallback)) for probe, result in results]


def print_table(rows: list[tuple[Probe, dict[str, Any]]]) -> int:
    """The probe x verdict table (stdout); returns how many verdicts differ from the header."""
    from rich.console import Console
    from rich.table import Table

    surprises = 0
    env = rows[0][1]["environment"] if rows else {}
    where = (
        "CPU interpreter"
        if env.get("interpreter")
        else f"{env.get('device_name')} (sm {env.get('capability')})"
    )
    table = Table(
        title=f"failure probes on {where}, torch {env.get('torch')}, triton {env.get('triton')}"
    )
    for column in ("probe", "task", "expected", "verdict", "error type", ""):
        table.add_column(column)
    for probe, record in rows:
        expected = probe.expected_status(bool(record["environment"].get("interpreter")))
        status = record["status"]
        matches = status == expected or (expected == "error" and status != "correct")
        surprises += not matches
        table.add_row(
            probe.id,
            probe.task,
            expected,
            status,
            record["error_type"] or "",
            "" if matches else "[yellow]unexpected[/yellow]",
        )
    Console(highlight=False, width=max(Console().width, 150)).print(table)
    return surprises


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device",
        default="auto",
        help="cpu (Triton interpreter), cuda, cuda:N or auto (default: auto)",
    )
    parser.add_argument(
        "--probe",
        action="append",
        metavar="NN|NAME",
        help="run only this probe (repeatable), e.g. 04 or global_not_constexpr",
    )
    parser.add_argument("--timeout", type=float, default=None, help="seconds per evaluation")
    parser.add_argument("--evidence", type=Path, default=EVIDENCE, help="the JSONL file to merge")
    parser.add_argument(
        "--import-notes",
        action="store_true",
        help=f"also merge {NOTES.relative_to(REPO)} as records with origin 'writing'",
    )
    parser.add_argument("--no-probes", action="store_true", help="run no probe")
    parser.add_argument("--dry-run", action="store_true", help="print the table, write nothing")
    args = parser.parse_args(argv)

    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))

    new: list[dict[str, Any]] = []
    if args.import_notes:
        notes = note_records()
        new += notes
        print(f"{len(notes)} records from {NOTES.relative_to(REPO)}", file=sys.stderr)
    surprises = 0
    if not args.no_probes:
        probes = load_probes(args.probe)
        rows = asyncio.run(run_probes(probes, args.device, args.timeout))
        new += [record for _, record in rows]
        surprises = print_table(rows)
    if args.dry_run:
        return 0
    merged = merge(args.evidence, new)
    write_jsonl(args.evidence, merged)
    print(f"{len(new)} records merged; {args.evidence} holds {len(merged)}", file=sys.stderr)
    if surprises:
        print(
            f"{surprises} verdict(s) differ from the probes' headers: read them before "
            "committing the evidence",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
