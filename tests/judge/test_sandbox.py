"""The operating system's sandbox around user code, with the source check disguised past and
(mostly) the audit hook off: what a kernel cannot change, read or see whatever it tries.

Directories the kernels attack lie next to the repository, not under /tmp: /tmp is hidden from
every sandboxed process (but for what Python needs there), so only a directory outside it shows
that the view is read-only and that the judge's and the user's homes are hidden by name. One
test puts the homes inside what Python needs under /tmp, where they must be hidden again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import adaexplore_mcp
from adaexplore_mcp.judge import LocalJudge, Status
from adaexplore_mcp.judge.sandbox import filesystem
from adaexplore_mcp.judge.settings import IntegritySettings, SandboxSettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import get_bundled_task

from ..conftest import SyncJudge, cpu_settings
from .exploits import wrapped
from .kernels import module

SOFTMAX = get_bundled_task("softmax")
REPOSITORY = Path(adaexplore_mcp.__file__).resolve().parent.parent
SOFTMAX_RESULT = "return torch.softmax(x, -1)"
# a checkout under /tmp (or another hidden place): what lies beside its package is not in the
# view at all, so a change there meets no directory rather than a read-only one
HIDDEN_REPOSITORY = any(
    filesystem._within(str(REPOSITORY), root) for root in filesystem.HIDDEN_ALWAYS
)


def _beside_the_repository(kind: str) -> Path:
    path = REPOSITORY / f".sandbox-{kind}-{uuid.uuid4().hex[:12]}"
    path.mkdir()
    return path


def _needs_namespaces(result) -> None:
    """Where the machine allows no user namespace the judge falls back to Landlock, which only
    confines writes: the view these tests probe does not exist there."""
    if not result.environment.sandbox.user_namespace:
        pytest.skip("this machine does not allow unprivileged user namespaces")


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every entry under ``root``, with a file's content (None for anything else)."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() and not p.is_symlink() else None
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def target() -> Iterator[Path]:
    """A directory the host can write, visible (read-only) inside the sandbox, with one file."""
    path = _beside_the_repository("target")
    try:
        (path / "kept.txt").write_text("kept")
        yield path
    finally:
        shutil.rmtree(path)


@pytest.fixture(scope="module")
def private_homes(loop_thread) -> Iterator[tuple[SyncJudge, Path, Path, str]]:
    """A judge whose home (with its database) and whose user's HOME both hold a secret:
    (judge, judge home, user home, secret)."""
    judge_home = _beside_the_repository("judge-home")
    user_home = _beside_the_repository("user-home")
    secret = f"secret-{uuid.uuid4().hex}"
    try:
        for home in (judge_home, user_home):
            (home / "secret.txt").write_text(secret)
        settings = cpu_settings(workers_per_device=1, integrity=IntegritySettings(enabled=False))
        judge = LocalJudge(
            settings, home=judge_home, store=Store(judge_home / "adaexplore.sqlite3")
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HOME", str(user_home))  # the workers' environment is taken at start
            loop_thread.run(judge.start())
        try:
            yield SyncJudge(loop_thread, judge), judge_home, user_home, secret
        finally:
            loop_thread.run(judge.close())
    finally:
        shutil.rmtree(judge_home)
        shutil.rmtree(user_home)


FILESYSTEM_CHANGES = """
refused = []
for name, args in (
    ('mk' + 'dir', (TARGET + '/made',)),
    ('sym' + 'link', ('/etc/passwd', TARGET + '/link')),
    ('re' + 'name', (TARGET + '/kept.txt', TARGET + '/renamed.txt')),
    ('un' + 'link', (TARGET + '/kept.txt',)),
):
    try:
        getattr(os, name)(*args)
    except OSError as error:
        refused.append(f'{name}: {error.strerror}')
if refused:
    raise OSError(' | '.join(refused))
"""


def test_the_filesystem_outside_the_scratch_space_is_read_only(unguarded_judge, target):
    """With the audit hook off, mkdir, symlink, rename and unlink outside the working
    directory each meet the read-only view, and the host's directory is left as it was."""
    before = _tree(target)
    code = module(FILESYSTEM_CHANGES + SOFTMAX_RESULT, prelude=f"TARGET = {str(target)!r}")
    result = unguarded_judge.evaluate(SOFTMAX, code, timeout_s=60)
    assert _tree(target) == before == {"kept.txt": b"kept"}
    _needs_namespaces(result)
    assert result.status is Status.RUNTIME_ERROR, result.message
    if HIDDEN_REPOSITORY:
        assert result.error.message.count("No such file or directory") == 4, result.error.message
        return
    assert result.error.message.count("Read-only file system") == 4, result.error.message
    assert "The sandbox refused it" in result.message


def test_a_change_outside_the_working_directory_is_named_by_the_audit_hook(cpu_judge, target):
    """With the integrity checks on, the same mkdir is rejected as the kernel's own doing."""
    before = _tree(target)
    forward = "getattr(os, 'mk' + 'dir')(TARGET + '/made')\nreturn honest(x)"
    result = cpu_judge.evaluate(
        SOFTMAX, wrapped(forward, prelude=f"TARGET = {str(target)!r}"), timeout_s=60
    )
    assert _tree(target) == before
    assert result.status is Status.REJECTED, result.message
    assert result.integrity[0].check == "file_write", result.message


def test_the_judges_database_cannot_be_written(private_homes):
    """The database in the judge's home is hidden: a kernel cannot open it, let alone add to it."""
    judge, judge_home, _, _ = private_homes
    database = judge_home / "adaexplore.sqlite3"
    forward = (
        f"db = sqlite3.connect({str(database)!r})\n"
        "db.execute('CREATE TABLE pwned (x)')\ndb.commit()\n" + SOFTMAX_RESULT
    )
    result = judge.evaluate(SOFTMAX, module(forward, prelude="import sqlite3"), timeout_s=60)
    with contextlib.closing(sqlite3.connect(database)) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert "pwned" not in tables
    _needs_namespaces(result)
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert result.error.type == "OperationalError", result.message


@pytest.mark.parametrize("which", ["judge", "user"])
def test_the_judges_and_the_users_homes_are_unreadable(private_homes, which):
    """Both homes are covered by an empty directory: nothing to list, no file to read."""
    judge, judge_home, user_home, secret = private_homes
    home = str(judge_home if which == "judge" else user_home)
    forward = (
        f"print('LISTING', os.listdir({home!r}))\n"
        f"print(open(os.path.join({home!r}, 'secret.txt')).read())\n" + SOFTMAX_RESULT
    )
    result = judge.evaluate(SOFTMAX, module(forward), timeout_s=60)
    _needs_namespaces(result)
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert result.error.type == "FileNotFoundError", result.message
    printed = result.output_tail or ""
    assert "LISTING []" in printed or HIDDEN_REPOSITORY  # there: not even listed
    assert secret not in printed + result.message + result.error.message


def test_a_home_inside_a_directory_python_needs_is_covered_again(tmp_path, monkeypatch):
    """/tmp is hidden, a checkout on sys.path under it is mounted back, and the judge's home in
    that checkout must not come back with it."""
    checkout = tmp_path / "checkout"
    home = checkout / ".adaexplore"
    venv = checkout / ".venv"
    for path in (home, venv):
        path.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(checkout)])
    plan = filesystem.plan_for(
        private_dirs=[str(home), str(venv.parent / "gone")],
        workdir="/work",
        workdir_bytes=2**20,
        tmp_bytes=2**20,
    )
    assert "/tmp" in plan.hide and str(checkout.resolve()) in plan.keep
    assert plan.cover == (str(home.resolve()),)
    # a hidden directory that holds something Python needs stays visible
    monkeypatch.setattr(sys, "path", [*sys.path, str(venv)])
    plan = filesystem.plan_for(
        private_dirs=[str(checkout / ".venv"), str(home)],
        workdir="/work",
        workdir_bytes=2**20,
        tmp_bytes=2**20,
    )
    assert plan.cover == (str(home.resolve()),)


def test_only_the_package_of_a_checkout_on_the_path_is_kept(tmp_path, monkeypatch):
    """A development install puts its checkout on sys.path; what lies beside the package there
    (a .env, the git history) is not needed and stays hidden. An installed package's directory
    holds the other packages too, and is kept whole."""
    checkout = tmp_path / "checkout"
    package = checkout / "adaexplore_mcp"
    package.mkdir(parents=True)
    (checkout / ".env").write_text("API_KEY=secret")
    monkeypatch.setattr(sys, "path", [*sys.path, str(checkout)])
    options = {"private_dirs": [], "workdir": "/work", "workdir_bytes": 1, "tmp_bytes": 1}
    plan = filesystem.plan_for(**options, package_dir=str(package))
    assert str(package.resolve()) in plan.keep
    assert str(checkout.resolve()) not in plan.keep
    monkeypatch.setattr(filesystem, "_site_directories", lambda: [str(checkout)])
    plan = filesystem.plan_for(**options, package_dir=str(package))
    assert str(checkout.resolve()) in plan.keep


def test_homes_on_the_workers_python_path_are_unreadable(loop_thread, tmp_path, monkeypatch):
    """Exploit: with the judge's home and the user's inside a directory on the workers'
    PYTHONPATH under /tmp (a checkout run from there, as CI's may be), that directory was
    mounted back whole and both secrets were read."""
    on_path = tmp_path / "checkout"
    judge_home, user_home = on_path / "judge-home", on_path / "user-home"
    secret = f"secret-{uuid.uuid4().hex}"
    for home in (judge_home, user_home):
        home.mkdir(parents=True)
        (home / "secret.txt").write_text(secret)
    monkeypatch.setenv("PYTHONPATH", str(on_path))
    monkeypatch.setenv("HOME", str(user_home))
    settings = cpu_settings(workers_per_device=1, integrity=IntegritySettings(enabled=False))
    judge = LocalJudge(settings, home=judge_home, store=Store(judge_home / "adaexplore.sqlite3"))
    forward = "".join(
        f"print('LISTING', sorted(os.listdir({str(home)!r})))\n"
        for home in (judge_home, user_home, on_path)
    ) + (
        "for home in HOMES:\n"
        "    try:\n"
        "        print(open(os.path.join(home, 'secret.txt')).read())\n"
        "    except OSError as error:\n"
        "        print('REFUSED', type(error).__name__)\n" + SOFTMAX_RESULT
    )
    code = module(forward, prelude=f"HOMES = {[str(judge_home), str(user_home)]!r}")

    async def run():
        async with judge:
            return await judge.evaluate(SOFTMAX, code, timeout_s=60)

    result = loop_thread.run(run())
    _needs_namespaces(result)
    assert result.status is Status.CORRECT, result.message
    assert secret not in result.output_tail
    calls = result.output_tail.count("LISTING ['judge-home', 'user-home']")  # one per call
    assert calls and result.output_tail.count("REFUSED FileNotFoundError") == 2 * calls
    assert "LISTING []\nLISTING []\nLISTING ['judge-home', 'user-home']" in result.output_tail


def test_the_caches_are_bounded_apart_from_the_output_limit(unguarded_judge):
    """24 MiB in Triton's cache directory (on the private /tmp) fit, though the output limit
    is 16 MiB."""
    forward = (
        "cache = getattr(os, 'env' + 'iron')['TRITON_CACHE_DIR']\n"
        "getattr(os, 'make' + 'dirs')(cache, exist_ok=True)\n"
        "with open(os.path.join(cache, 'big.bin'), 'wb') as f:\n"
        "    f.write(bytes(24 * 2**20))\n"
        "assert os.path.getsize(os.path.join(cache, 'big.bin')) == 24 * 2**20\n" + SOFTMAX_RESULT
    )
    result = unguarded_judge.evaluate(SOFTMAX, module(forward), timeout_s=60)
    assert result.status is Status.CORRECT, result.message


WRITE_24_MIB = "with open('big.bin', 'wb') as f:\n    f.write(bytes(24 * 2**20))\n"


def test_the_working_directory_holds_no_more_than_the_output_limit(cpu_judge):
    """The working directory is a 16 MiB filesystem of its own: a bigger file does not fit."""
    result = cpu_judge.evaluate(SOFTMAX, wrapped(WRITE_24_MIB + "return honest(x)"), timeout_s=60)
    _needs_namespaces(result)
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert "No space left on device" in result.error.message
    assert "more than its working directory holds (the output limit)" in result.message


def test_a_kernel_sees_no_process_but_its_own(unguarded_judge):
    """Its /proc is its PID namespace's: the namespace's init and the kernel's process, and
    none of the host's (this test's process among them)."""
    forward = (
        "pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
        "if len(pids) > 2 or HOST_PID in set(pids) - {1, os.getpid()}:\n"
        "    raise RuntimeError(f'other processes are visible: {pids}')\n" + SOFTMAX_RESULT
    )
    code = module(forward, prelude=f"HOST_PID = {os.getpid()}")
    result = unguarded_judge.evaluate(SOFTMAX, code, timeout_s=60)
    _needs_namespaces(result)
    assert result.status is Status.CORRECT, result.message


def test_the_machines_settings_in_proc_are_read_only(unguarded_judge):
    """The machine's settings under /proc cannot be opened for writing. Where the judge runs as
    root, the sandbox's user is root's mapping: a writable /proc/sys let a kernel change
    settings of the whole machine (core_pattern runs a command as root)."""
    forward = (
        "opened = []\n"
        "for path in ('/proc/sys/kernel/hostname', '/proc/sys/vm/overcommit_memory', "
        "'/proc/sys/kernel/core_pattern', '/proc/sysrq-trigger'):\n"
        "    try:\n"
        "        open(path, 'r+').close()\n"
        "        opened.append(path)\n"
        "    except OSError:\n"
        "        pass\n"
        "if opened:\n"
        "    raise RuntimeError(f'opened for writing: {opened}')\n" + SOFTMAX_RESULT
    )
    result = unguarded_judge.evaluate(SOFTMAX, module(forward), timeout_s=60)
    _needs_namespaces(result)
    assert result.status is Status.CORRECT, result.message


def test_a_kernels_dev_holds_only_the_devices_a_kernel_needs(unguarded_judge):
    """Where the judge runs as root, the sandbox's user owns every device node of the host's
    /dev: a kernel opened /dev/loop0 for reading, bound it to a file of its own with an ioctl,
    and the next evaluation's kernel read that file's contents back from it. The view's /dev
    holds the null, zero, full and random devices, the GPU's, and links to the process's own
    descriptors."""
    forward = (
        "names = set(os.listdir(DEV))\n"
        "extra = names - KEPT - {'fd', 'stdin', 'stdout', 'stderr', 'shm'}\n"
        "extra = {name for name in extra if not name.startswith('nvidia')}\n"
        "if extra or not os.path.exists(DEV + '/fd/1'):\n"
        "    raise RuntimeError(f'/dev holds {sorted(extra)}')\n"
        "with open(DEV + '/urandom', 'rb') as handle, open(DEV + '/null', 'wb') as sink:\n"
        "    sink.write(handle.read(16))\n" + SOFTMAX_RESULT
    )
    kept = {name.removeprefix("/dev/") for name in filesystem.DEVICES}
    prelude = f"KEPT = {kept!r}\nDEV = '/' + 'dev'"
    result = unguarded_judge.evaluate(SOFTMAX, module(forward, prelude=prelude))
    _needs_namespaces(result)
    assert result.status is Status.CORRECT, result.message


def test_a_socket_is_only_of_a_family_the_network_namespace_holds(unguarded_judge):
    """A virtual machine's socket (AF_VSOCK) reaches its host whatever the network namespace:
    a kernel could make one. Local and namespaced families stay allowed."""
    forward = (
        "_socket = socketserver.socket\n"
        "for family in (40, 31, 29):  # AF_VSOCK, AF_BLUETOOTH, AF_CAN\n"
        "    try:\n"
        "        getattr(_socket, 'socket')(family, _socket.SOCK_STREAM).close()\n"
        "    except OSError as error:\n"
        "        if error.errno != 1:\n"
        "            raise RuntimeError(f'family {family}: {error}')\n"
        "    else:\n"
        "        raise RuntimeError(f'a socket of family {family} was made')\n"
        "getattr(_socket, 'socketpair')()[0].close()\n" + SOFTMAX_RESULT
    )
    result = unguarded_judge.evaluate(SOFTMAX, module(forward, prelude="import socketserver"))
    _needs_namespaces(result)
    assert result.status is Status.CORRECT, result.message


def test_a_kernels_process_may_name_its_threads(unguarded_judge):
    """A process's own /proc entries stay writable: the CUDA driver cannot start without them
    (a read-only /proc failed every GPU evaluation with cudaErrorOsCallFailed)."""
    forward = (
        "with open(f'/proc/self/task/{os.getpid()}/comm', 'w') as handle:\n"
        "    handle.write('kernel')\n" + SOFTMAX_RESULT
    )
    result = unguarded_judge.evaluate(SOFTMAX, module(forward), timeout_s=60)
    _needs_namespaces(result)
    assert result.status is Status.CORRECT, result.message


def test_the_output_limit_holds_without_a_private_view(loop_thread, tmp_path):
    """output_limit_mb bounds what a kernel writes to its working directory, also where the
    judge confines writes with Landlock instead of a private view."""
    settings = cpu_settings(
        workers_per_device=1,
        integrity=IntegritySettings(enabled=False),
        sandbox=SandboxSettings(private_filesystem=False),
    )

    async def run():
        async with LocalJudge(settings, home=tmp_path) as judge:
            return await judge.evaluate(
                SOFTMAX, module(WRITE_24_MIB + SOFTMAX_RESULT), timeout_s=60
            )

    result = loop_thread.run(run())
    if not result.environment.sandbox.landlock:
        pytest.skip("Landlock is not available on this machine")
    assert result.status is Status.RUNTIME_ERROR, result.message
    assert "more than the output limit" in result.message


def test_the_gpus_device_nodes_are_kept_but_not_a_dangling_link(tmp_path):
    """A dangling ``nvidia*`` link on the host failed every sandbox's private view (its
    ``O_PATH`` open raised before the view was built)."""
    for name in ("nvidia0", "nvidiactl", "loop0"):
        (tmp_path / name).write_text("")
    (tmp_path / "nvidia-caps").mkdir()
    (tmp_path / "nvidia-gone").symlink_to(tmp_path / "missing")
    kept = filesystem.devices_to_keep(str(tmp_path))
    gpu = sorted(os.path.basename(path) for path in kept if path.startswith(str(tmp_path)))
    assert gpu == ["nvidia-caps", "nvidia0", "nvidiactl"]
