"""A local Ray cluster in a process of its own, that a test can take away at once, as a restart
or a crashed head would, and start again: a new cluster at a new address.

The tests' own process never joins it (a process is connected to one cluster at a time, and
other tests' cluster may be that one), so what talks to it is a subprocess, such as
``adaexplore-mcp drive --judge ray`` with ``environment`` set.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

from tests.judge.servers import descendants

# The head's process: starts the cluster, says where it is and how to join it, then waits.
# Ray's own processes (GCS, raylet, the workers that hold actors) are its descendants.
_HEAD = """
import json, os, sys, time
import ray
ray.init(num_cpus=int(sys.argv[1]), num_gpus=int(sys.argv[2]), include_dashboard=False,
         log_to_driver=False)
joining = {key: value for key, value in os.environ.items() if key.startswith("RAY_AUTH")}
print(json.dumps({"address": ray.get_runtime_context().gcs_address, "env": joining}), flush=True)
while True:
    time.sleep(3600)
"""


class LocalRayCluster:
    """``with LocalRayCluster(cpus=3) as cluster:`` a cluster; ``cluster.kill()`` ends every
    process of it with SIGKILL, the actors and what they started included."""

    def __init__(self, *, cpus: int, gpus: int = 0, start_timeout_s: float = 60) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _HEAD, str(cpus), str(gpus)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        try:
            line = _read_line(self._process, start_timeout_s)
            started = json.loads(line)
        except BaseException:
            self.kill()
            raise
        self.address: str = started["address"]
        # what a process needs to join it: the address, and Ray's authentication mode when
        # the head turned token authentication on (the token itself is in the user's Ray dir)
        self.environment: dict[str, str] = {"RAY_ADDRESS": self.address, **started["env"]}

    def __enter__(self) -> LocalRayCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()

    def kill(self) -> None:
        """Every process of the cluster at once, no process given time to clean up."""
        for pid in [self._process.pid, *descendants(self._process.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self._process.wait(timeout=30)


def _read_line(process: subprocess.Popen, timeout_s: float) -> str:
    import selectors

    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout_s):
            raise TimeoutError(f"the Ray head did not start within {timeout_s:g} s")
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"the Ray head exited with {process.wait()} before it started")
    return line
