"""A stand-in for Nsight Compute's ncu: an executable that checks the options the profiler
passes, optionally runs the profiled command as ncu would, and writes a CSV in the layout of
``ncu --csv --page raw --print-units base``: a header of names (the launch's identity, then
every rollup of each metric), a row of units, one row per launch, every field quoted, numbers
with thousands separators."""

from __future__ import annotations

import csv
import io
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

IDENTITY = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
)
# the columns ncu wrote on an H100 for the profiler's metrics, with their base units
COLUMNS = {
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "%",
    "dram__throughput.max.pct_of_peak_sustained_elapsed": "%",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "%",
    "gpu__time_duration.avg": "ns",
    "gpu__time_duration.sum": "ns",
    "launch__block_size": "",
    "launch__grid_size": "",
    "launch__registers_per_thread": "register/thread",
    "launch__shared_mem_per_block": "byte/block",
    "lts__t_sector_hit_rate.pct": "%",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "%",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "%",
}


@dataclass
class Row:
    kernel: str
    ns: float
    sm: float | str = 5.0
    memory: float | str = 81.0
    dram: float = 80.0
    occupancy: float = 80.0
    l2_hit: float = 51.0
    registers: int = 18
    shared: int = 1024
    grid: int = 16384
    block: int = 128
    extra: dict[str, str] = field(default_factory=dict)


def _thousands(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def ncu_csv(rows: list[Row], *, time_unit: str = "ns") -> str:
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    names = list(COLUMNS)
    writer.writerow([*IDENTITY, *names])
    units = {**COLUMNS, "gpu__time_duration.avg": time_unit, "gpu__time_duration.sum": time_unit}
    writer.writerow(["" for _ in IDENTITY] + [units[name] for name in names])
    for index, row in enumerate(rows):
        values = {
            "dram__throughput.avg.pct_of_peak_sustained_elapsed": row.dram,
            "dram__throughput.max.pct_of_peak_sustained_elapsed": row.dram + 1,
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": row.memory,
            "gpu__time_duration.avg": row.ns,
            "gpu__time_duration.sum": row.ns,
            "launch__block_size": row.block,
            "launch__grid_size": row.grid,
            "launch__registers_per_thread": row.registers,
            "launch__shared_mem_per_block": row.shared,
            "lts__t_sector_hit_rate.pct": row.l2_hit,
            "sm__throughput.avg.pct_of_peak_sustained_elapsed": row.sm,
            "sm__warps_active.avg.pct_of_peak_sustained_active": row.occupancy,
        }
        identity = [
            str(index),
            "522",
            "python3.12",
            "127.0.0.1",
            row.kernel,
            "1",
            "7",
            f"({row.block}, 1, 1)",
            f"({row.grid}, 1, 1)",
            "0",
            "9.0",
        ]
        writer.writerow(identity + [_thousands(values[name]) for name in names])
    return out.getvalue()


SCRIPT = """#!{python}
import subprocess, sys, time

args = sys.argv[1:]


def option(name):
    if name not in args:
        sys.exit(f"fake ncu: {{name}} missing from {{args}}")
    return args[args.index(name) + 1]


for name, value in {expected!r}.items():
    if option(name) != value:
        sys.exit(f"fake ncu: {{name}} is {{option(name)!r}}, not {{value!r}}")
if "--csv" not in args:
    sys.exit("fake ncu: --csv missing")
metrics = set(option("--metrics").split(","))
if not {metrics!r} <= metrics:
    sys.exit(f"fake ncu: metrics {{sorted(metrics)}}")
log = option("--log-file")
command = args[args.index("--log-file") + 2:]
print("==PROF== Connected to process 1 (" + command[0] + ")", flush=True)
time.sleep({sleep_s!r})
if {run!r}:
    code = subprocess.run(command).returncode
    if code:
        print(f"==ERROR== The application returned an error code ({{code}}).", flush=True)
        sys.exit(code)
print({message!r}, flush=True)
with open(log, "w") as handle:
    handle.write({csv!r})
sys.exit({exit_code!r})
"""


def write_fake_ncu(
    directory: Path,
    rows: list[Row],
    *,
    run_target: bool = False,
    exit_code: int = 0,
    sleep_s: float = 0.0,
    message: str = "==PROF== Disconnected from process 1",
    time_unit: str = "ns",
) -> Path:
    """An executable ``ncu`` in ``directory``; it fails (exit 1, saying why) when the profiler's
    options are not what they must be."""
    from adaexplore_mcp.judge.profile.metrics import METRICS

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "ncu"
    path.write_text(
        SCRIPT.format(
            python=sys.executable,
            expected={
                "--page": "raw",
                "--print-units": "base",
                "--clock-control": "none",
                "--target-processes": "all",
                "--profile-from-start": "off",
            },
            metrics=set(METRICS),
            sleep_s=sleep_s,
            run=run_target,
            message=message,
            csv=ncu_csv(rows, time_unit=time_unit),
            exit_code=exit_code,
        )
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path
