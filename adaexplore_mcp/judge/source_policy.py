"""What a candidate's source may not do, checked before any process is spent on it.

A kernel module needs torch, triton and arithmetic. Processes, sockets, dynamic code, the
judge's internals, precision switches and a ``try`` around a launch (a silent fallback to torch
when the kernel fails) have no place in it, and each is the first step of a known way to fake a
result. These checks read the syntax tree only; the child enforces the same rules at run time
(``guard``), so renaming an import does not get past both.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# module -> why a kernel may not import it
_FORBIDDEN_MODULES: dict[str, tuple[str, str]] = {
    "subprocess": ("process_spawn", "a kernel may not start processes"),
    "multiprocessing": ("process_spawn", "a kernel may not start processes"),
    "pty": ("process_spawn", "a kernel may not start processes"),
    "socket": ("network", "a kernel has no network access"),
    "ssl": ("network", "a kernel has no network access"),
    "http": ("network", "a kernel has no network access"),
    "urllib": ("network", "a kernel has no network access"),
    "requests": ("network", "a kernel has no network access"),
    "httpx": ("network", "a kernel has no network access"),
    "threading": ("background_thread", "work on other threads hides from the timer"),
    "_thread": ("background_thread", "work on other threads hides from the timer"),
    "concurrent": ("background_thread", "work on other threads hides from the timer"),
    "asyncio": ("background_thread", "work on other threads hides from the timer"),
    "ctypes": ("harness_tampering", "raw memory access can read or patch the judge"),
    "cffi": ("harness_tampering", "raw memory access can read or patch the judge"),
    "gc": ("harness_tampering", "walking the heap reaches the judge's objects"),
    "inspect": ("harness_tampering", "walking frames reaches the judge's objects"),
    "importlib": ("dynamic_code", "modules must be imported by name"),
    "signal": ("harness_tampering", "signals belong to the judge"),
    "adaexplore_mcp": ("harness_tampering", "the judge's own modules are off limits"),
}

_DYNAMIC_BUILTINS = {"exec", "eval", "compile", "__import__", "breakpoint"}

_PROCESS_CALLS = {
    "system",
    "popen",
    "fork",
    "forkpty",
    "execv",
    "execve",
    "execl",
    "execle",
    "execlp",
    "execlpe",
    "execvp",
    "execvpe",
    "spawnl",
    "spawnle",
    "spawnv",
    "spawnve",
    "posix_spawn",
    "posix_spawnp",
    "kill",
    "killpg",
}

_FILE_MUTATIONS = {"remove", "unlink", "rename", "replace", "rmdir", "removedirs", "makedirs"}

_PRECISION_SWITCHES = {
    "set_float32_matmul_precision": "torch.set_float32_matmul_precision",
    "set_default_dtype": "torch.set_default_dtype",
}
_PRECISION_FLAGS = {
    "allow_tf32",
    "allow_fp16_reduced_precision_reduction",
    "allow_bf16_reduced_precision_reduction",
    "fp32_precision",
}

_HARNESS_ATTRIBUTES = {
    "_getframe": "sys._getframe reaches the judge's frames",
    "modules": "sys.modules reaches the judge's modules",
    "settrace": "tracing hooks observe the judge",
    "setprofile": "profiling hooks observe the judge",
    "addaudithook": "audit hooks belong to the judge",
    "f_back": "frame walking reaches the judge's variables",
    "f_locals": "frame walking reaches the judge's variables",
    "f_globals": "frame walking reaches the judge's variables",
    "tb_frame": "frame walking reaches the judge's variables",
    "__builtins__": "the builtins belong to the judge",
    "environ": "the judge's environment is not the kernel's to read",
    "getenv": "the judge's environment is not the kernel's to read",
}


@dataclass(frozen=True)
class SourceFinding:
    check: str
    line: int
    detail: str

    def message(self) -> str:
        return f"kernel.py:{self.line}: {self.detail}"


def review(tree: ast.Module) -> list[SourceFinding]:
    """Every finding, in source order."""
    visitor = _Reviewer(_launching_functions(tree))
    visitor.visit(tree)
    return sorted(visitor.findings, key=lambda finding: finding.line)


class _Reviewer(ast.NodeVisitor):
    def __init__(self, launchers: set[str]) -> None:
        self.findings: list[SourceFinding] = []
        self.launchers = launchers

    def _add(self, check: str, node: ast.AST, detail: str) -> None:
        self.findings.append(SourceFinding(check, getattr(node, "lineno", 0), detail))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0:
            self._check_module(node.module, node)
            if node.module == "os":
                for alias in node.names:
                    self._check_os_name(alias.name, node)

    def _check_module(self, name: str, node: ast.AST) -> None:
        root = name.split(".")[0]
        if root in _FORBIDDEN_MODULES:
            check, why = _FORBIDDEN_MODULES[root]
            self._add(check, node, f"`import {name}` is not allowed: {why}")

    def _check_os_name(self, name: str, node: ast.AST) -> None:
        if name in _PROCESS_CALLS:
            self._add(
                "process_spawn",
                node,
                f"`os.{name}` is not allowed: a kernel may not start or signal processes",
            )
        elif name in {"environ", "getenv", "environb"}:
            self._add(
                "harness_tampering",
                node,
                f"`os.{name}` is not allowed: " + _HARNESS_ATTRIBUTES["environ"],
            )

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in _DYNAMIC_BUILTINS:
            self._add(
                "dynamic_code",
                node,
                f"`{func.id}()` is not allowed: write the code "
                "out; the judge only runs source it can read",
            )
        if isinstance(func, ast.Name) and func.id == "open":
            self._check_open(node)
        if isinstance(func, ast.Attribute):
            owner = _dotted(func.value)
            if owner == "os" and func.attr in _PROCESS_CALLS:
                self._add(
                    "process_spawn",
                    node,
                    f"`os.{func.attr}()` is not allowed: a kernel "
                    "may not start or signal processes",
                )
            if owner in {"os", "shutil"} and (
                func.attr in _FILE_MUTATIONS or func.attr in {"rmtree", "move", "copy"}
            ):
                # scratch files in the working directory are the kernel's own: a literal path
                # leaving it is refused here, any other by the child's audit hook
                for argument in node.args[:2]:
                    target = _leaving(argument)
                    if target is not None:
                        self._add(
                            "file_write",
                            node,
                            f"`{owner}.{func.attr}({target!r})` is not allowed: a kernel may "
                            "only change files inside its working directory",
                        )
                        break
            if func.attr in _PRECISION_SWITCHES and owner == "torch":
                self._add(
                    "precision_downgrade",
                    node,
                    f"`{_PRECISION_SWITCHES[func.attr]}()` "
                    "is not allowed: the judge fixes the precision of the comparison",
                )
        self.generic_visit(node)

    def _check_open(self, node: ast.Call) -> None:
        """Writes go to the private working directory; a literal path leaving it is refused
        here, any other path by the child's audit hook."""
        mode = node.args[1] if len(node.args) > 1 else None
        for keyword in node.keywords:
            if keyword.arg == "mode":
                mode = keyword.value
        mode_text = mode.value if isinstance(mode, ast.Constant) else None
        writes = mode_text is not None and bool(set(str(mode_text)) & set("wax+"))
        target = _leaving(node.args[0]) if node.args else None
        if writes and target is not None:
            self._add(
                "file_write",
                node,
                f"`open({target!r}, {mode_text!r})` is not "
                "allowed: a kernel may only write inside its working directory",
            )

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_store(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_store(node.target)
        self.generic_visit(node)

    def _check_store(self, target: ast.expr) -> None:
        if not isinstance(target, ast.Attribute):
            return
        dotted = _dotted(target)
        if target.attr in _PRECISION_FLAGS and dotted.startswith("torch."):
            self._add(
                "precision_downgrade",
                target,
                f"setting `{dotted}` is not allowed: the "
                "judge fixes the precision of the comparison",
            )
        elif dotted.startswith(("torch.", "triton.", "time.", "builtins.")) and not (
            dotted.startswith("torch.backends.")
        ):
            self._add(
                "harness_tampering",
                target,
                f"assigning `{dotted}` is not allowed: "
                "patching torch, triton or the clock changes what the judge measures",
            )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _HARNESS_ATTRIBUTES:
            owner = _dotted(node.value)
            if node.attr not in {"modules", "environ", "getenv"} or owner in {"sys", "os"}:
                self._add(
                    "harness_tampering",
                    node,
                    f"`{_dotted(node)}` is not allowed: " + _HARNESS_ATTRIBUTES[node.attr],
                )
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self._add(
                "harness_tampering",
                node,
                "`__builtins__` is not allowed: " + _HARNESS_ATTRIBUTES["__builtins__"],
            )

    def visit_Try(self, node: ast.Try | ast.TryStar) -> None:
        if node.handlers:
            for statement in node.body:
                launch = _first_launch(statement, self.launchers)
                if launch is not None:
                    self._add(
                        "launch_in_try",
                        launch,
                        "a kernel launch inside `try`/`except` "
                        "is not allowed: a failing kernel must fail, not fall back to "
                        "another path; remove the try/except",
                    )
                    break
        self.generic_visit(node)

    visit_TryStar = visit_Try


def _leaving(path: ast.expr) -> str | None:
    """A literal path that leaves the working directory (absolute, from home, or through
    ``..``), or None."""
    if not isinstance(path, ast.Constant) or not isinstance(path.value, str):
        return None
    target = path.value
    if target.startswith(("/", "~")) or ".." in target.replace("\\", "/").split("/"):
        return target
    return None


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "…"


def _is_launch(node: ast.AST) -> bool:
    """``kernel[grid](...)``: how every Triton kernel is launched."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)


def _calls(node: ast.AST) -> list[str]:
    """Names called in ``node``: ``f(...)`` and ``self.f(...)`` both give ``f``."""
    return [
        name
        for sub in ast.walk(node)
        if isinstance(sub, ast.Call) and (name := _last_name(sub.func)) is not None
    ]


def _launching_functions(tree: ast.Module) -> set[str]:
    """Functions and methods that launch a Triton kernel, directly or through each other."""
    bodies: dict[str, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            bodies.setdefault(node.name, node)
    launchers = {name for name, body in bodies.items() if any(map(_is_launch, ast.walk(body)))}
    aliases = [
        (target.id, _last_name(node.value))
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    ]
    changed = True
    while changed:
        changed = False
        for name, body in bodies.items():
            if name not in launchers and any(call in launchers for call in _calls(body)):
                launchers.add(name)
                changed = True
        for alias, source in aliases:  # run = self.forward; run(x)
            if alias not in launchers and source in launchers:
                launchers.add(alias)
                changed = True
    return launchers


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _first_launch(statement: ast.stmt, launchers: set[str]) -> ast.AST | None:
    for sub in ast.walk(statement):
        if _is_launch(sub):
            return sub
        if isinstance(sub, ast.Call) and _last_name(sub.func) in launchers:
            return sub
    return None
