"""The audit hook in the candidate's process, with Python's own import machinery: what an
honest kernel's imports do passes, what passes code off as a package's is refused."""

from __future__ import annotations

import json
import py_compile
import subprocess
import sys
import textwrap

import pytest

from adaexplore_mcp.judge import LocalJudge, Status
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task

from ..conftest import cpu_settings

RUNNER = textwrap.dedent(
    """
    import json, os, sys
    from adaexplore_mcp.judge.candidate.audit import audit_hook, candidate_calls
    from adaexplore_mcp.judge.candidate.provenance import guard_renaming

    kernel, workdir, site = sys.argv[1:4]
    events = []
    import adaexplore_mcp

    installed = (site + os.sep, os.path.dirname(adaexplore_mcp.__file__) + os.sep)
    sys.addaudithook(audit_hook(kernel, workdir + os.sep, events, installed))
    guard_renaming(
        lambda frame: candidate_calls(frame, kernel, installed),
        lambda detail: events.append(("harness_tampering", detail)),
    )
    sys.path.insert(0, site)
    try:
        exec(compile(open(kernel).read(), kernel, "exec"), {"__name__": "kernel"})
        outcome = "ran"
    except PermissionError as error:
        outcome = str(error)
    print(json.dumps({"outcome": outcome, "events": events}))
    """
)


MODULE = "VALUE = 41\n\n\ndef add(x):\n    return x + 1\n"
USES_IT = "import installedpkg\nassert installedpkg.add(installedpkg.VALUE) == 42\n"


def run_kernel(tmp_path, kernel_source: str, *, cached_as: str | None = None) -> dict:
    """Runs ``kernel_source`` as the candidate's file under the audit hook, with a package
    directory whose modules have no cached bytecode (as on the GPU machine's image), or
    bytecode compiled where the file was ``cached_as`` (a package installed, then moved)."""
    site = tmp_path / "site"
    (site / "installedpkg").mkdir(parents=True)
    source = site / "installedpkg" / "__init__.py"
    source.write_text(MODULE)
    if cached_as is not None:
        py_compile.compile(str(source), dfile=cached_as, doraise=True)
    workdir = tmp_path / "work"
    workdir.mkdir()
    kernel = workdir / "kernel.py"
    kernel.write_text(kernel_source)
    done = subprocess.run(
        [sys.executable, "-B", "-c", RUNNER, str(kernel), str(workdir), str(site)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_a_package_without_cached_bytecode_is_allowed(tmp_path):
    """A module imported from source is compiled under its own file name from its own text;
    every bundled solution was refused on a GPU machine whose Triton ships no bytecode."""
    report = run_kernel(tmp_path, USES_IT)
    assert report == {"outcome": "ran", "events": []}


@pytest.mark.parametrize("cached_as", ["here", "elsewhere"])
def test_importing_a_package_from_its_cached_bytecode_is_allowed(tmp_path, cached_as):
    """Unmarshalled from the package's own cache, and (compiled before the package was moved)
    renamed to where it lies now by the import machinery."""
    here = str(tmp_path / "site" / "installedpkg" / "__init__.py")
    where = here if cached_as == "here" else "/opt/moved/installedpkg/__init__.py"
    report = run_kernel(tmp_path, USES_IT, cached_as=where)
    assert report == {"outcome": "ran", "events": []}


@pytest.mark.parametrize(
    "how",
    [
        "compile(SOURCE, FILE, 'exec')",
        "importlib.machinery.SourceFileLoader('installedpkg', FILE).source_to_code(SOURCE, FILE)",
        "compile(ast.parse(SOURCE), FILE, 'exec')",
        "marshal.loads(marshal.dumps(compile(SOURCE, 'x' * len(FILE), 'exec')).replace(\n"
        "    b'x' * len(FILE), FILE.encode()))",
        "_imp._fix_co_filename(compile(SOURCE, 'helper', 'exec'), FILE)",
        "importlib.util.module_from_spec(importlib.machinery.BuiltinImporter.find_spec('_imp'))",
    ],
    ids=["builtin", "stdlib_loader", "syntax_tree", "marshalled", "renamed", "second_imp"],
)
def test_other_code_made_to_name_a_packages_file_is_refused(tmp_path, how):
    prelude = (
        "import _imp, ast, importlib.machinery, importlib.util, marshal, installedpkg\n"
        "FILE = installedpkg.__file__\n"
        "SOURCE = b'VALUE = 0\\n'\n"
    )
    report = run_kernel(tmp_path, prelude + how + "\n")
    assert report["outcome"].startswith("refused by the judge")
    assert [check for check, _ in report["events"]] == ["harness_tampering"]


def test_a_kernel_importing_a_module_without_cached_bytecode_passes(
    loop_thread, tmp_path, monkeypatch
):
    """End to end, on the judge: the candidate's process imports a module of a read-only
    package with no bytecode beside it. It was refused twice on the H200: for compiling the
    module under its file name, then for the import machinery's attempt to cache bytecode."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "uncachedhelper.py").write_text("def rows(x):\n    return x.shape[0]\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    code = "import uncachedhelper\n" + bundled_solution("softmax")
    judge = LocalJudge(cpu_settings(workers_per_device=1), home=tmp_path / "home")

    async def run():
        async with judge:
            return await judge.evaluate(get_bundled_task("softmax"), code, timeout_s=120)

    result = loop_thread.run(run())
    assert result.status is Status.CORRECT, result.message
    assert not list(site.rglob("*.pyc"))
