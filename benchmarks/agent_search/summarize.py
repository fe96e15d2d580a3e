"""The steps of an agent-driven search round, one line each, from run_round.py's answers.json.

python benchmarks/agent_search/summarize.py DIR/answers.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str) -> None:
    for entry in json.loads(Path(path).read_text()):
        tool, body = entry["tool"], entry["answer"]
        if tool == "select_node":
            print(f"select_node: {body.get('action')} on node {(body.get('node') or {}).get('id')}")
        elif tool in ("apply_patch", "regenerate"):
            node, verdict = body.get("node") or {}, body.get("verdict") or {}
            speedup = node.get("speedup")
            print(
                f"{tool}: node {node.get('id')} (parent {node.get('parent_id')}) "
                f"{verdict.get('status')} "
                f"{speedup and f'{speedup:.2f}x'} {node.get('runtime_ms')} ms | "
                f"{verdict.get('speed_of_light')} | improved {body.get('improved')}"
            )
        elif tool == "best_kernel":
            picks = [(c["node_id"], round(c["median_ms"], 5)) for c in body.get("candidates", [])]
            print(
                f"best_kernel: node {(body.get('node') or {}).get('id')} by "
                f"{body.get('decided_by')}; re-measured {picks}"
            )


if __name__ == "__main__":
    main(sys.argv[1])
