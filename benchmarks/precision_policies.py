"""One fused-GEMM task and one tl.dot kernel judged under each precision policy, on a GPU.

    python benchmarks/precision_policies.py --device cuda:0 --out precision.json

The task is the bundled ``gemm_scale_residual`` (float32: (x @ W^T + b) * scale + residual,
2048x4096x4096). The kernel is a plain tiled tl.dot GEMM with the epilogue fused, in three forms:
tl.dot's default input precision (TF32 on NVIDIA GPUs), ``input_precision="ieee"``, and float16
operands (TF32's significand, float16's range). Each is
judged under strict, tf32 and legacy; the table gives the verdict, the kernel's median, both
baselines' medians (timed with TF32 off for strict and legacy, on for tf32) and the speedups.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

from adaexplore_mcp.judge import EvalResult, LocalJudge
from adaexplore_mcp.judge.policy import Precision
from adaexplore_mcp.judge.settings import JudgeSettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import resolve_task

KERNEL = Path(__file__).parent.parent / "scripts" / "failure_probes" / "19_dot_fp32_tf32_default.py"
DEFAULT_DOT = "acc = tl.dot(a, b, acc)"


def kernels() -> dict[str, str]:
    source = KERNEL.read_text()
    assert DEFAULT_DOT in source
    return {
        "tl.dot default (TF32)": source,
        'tl.dot input_precision="ieee"': source.replace(
            DEFAULT_DOT, 'acc = tl.dot(a, b, acc, input_precision="ieee")'
        ),
        # TF32's significand with float16's range: tf32 refuses it (docs/precision.md)
        "tl.dot on float16 operands": source.replace(
            DEFAULT_DOT, "acc = tl.dot(a.to(tl.float16), b.to(tl.float16), acc)"
        ),
    }


def row(kernel: str, policy: Precision, result: EvalResult) -> dict:
    mismatch = result.correctness.mismatch
    return {
        "kernel": kernel,
        "policy": policy.value,
        "status": result.status.value,
        "kernel_ms": result.runtime.median_ms if result.runtime else None,
        "eager_ms": result.eager.median_ms if result.eager else None,
        "compile_ms": result.compiled.median_ms if result.compiled else None,
        "speedup_eager": result.speedup_eager,
        "speedup_compile": result.speedup_compile,
        "max_abs_error": result.correctness.max_abs_error,
        "rel_l2_error": mismatch.rel_l2_error if mismatch else None,
        "errors_by_shape": [e.model_dump() for e in mismatch.errors_by_shape or []]
        if mismatch
        else None,
        "message": result.message,
    }


async def main(device: str, out: Path | None) -> None:
    task = resolve_task("gemm_scale_residual")
    with tempfile.TemporaryDirectory() as home:
        judge = LocalJudge(
            JudgeSettings(device=device, workers_per_device=2),
            home=Path(home),
            store=Store(Path(home) / "db.sqlite3"),
        )
        async with judge:
            rows = []
            for name, code in kernels().items():
                for policy in Precision:
                    result = await judge.evaluate(task, code, precision=policy)
                    rows.append(row(name, policy, result))
    header = f"{'kernel':<30} {'policy':<7} {'verdict':<10} {'kernel ms':>9} {'eager ms':>9} "
    header += f"{'compile ms':>10} {'x eager':>8} {'x compile':>9}"
    print(header)

    def fmt(value: float | None, digits: int = 3) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    for r in rows:
        print(
            f"{r['kernel']:<30} {r['policy']:<7} {r['status']:<10} {fmt(r['kernel_ms']):>9} "
            f"{fmt(r['eager_ms']):>9} {fmt(r['compile_ms']):>10} {fmt(r['speedup_eager'], 2):>8} "
            f"{fmt(r['speedup_compile'], 2):>9}"
        )
    for r in rows:
        if r["status"] != "correct":
            print(f"\n{r['kernel']} / {r['policy']}: {r['message']}")
    if out is not None:
        out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    asyncio.run(main(args.device, args.out))
