"""`adaexplore-mcp rules …` end to end, in a subprocess with its own ADAEXPLORE_HOME."""

import json

from tests.conftest import run_cli

RULE = (
    "You cannot print from a @triton.jit kernel with Python's print; use tl.device_print instead."
)


def rules(home, *args, stdin=None):
    result = run_cli("rules", *args, home=home, stdin=stdin, timeout=60)
    return result


def test_add_list_show_retire_and_failures(tmp_path):
    home = tmp_path / "home"
    added = rules(home, "add", RULE)
    assert added.returncode == 0, added.stderr
    rule_id = int(added.stdout.split()[2])

    listed = rules(home, "list", "--json")
    texts = [json.loads(line)["text"] for line in listed.stdout.splitlines()]
    assert RULE in texts

    shown = rules(home, "show", str(rule_id))
    assert shown.returncode == 0 and "manual" in shown.stdout and RULE in shown.stdout

    again = rules(home, "add", RULE.replace("Python's print", "Python print"))
    assert f"already there as rule {rule_id}" in again.stdout
    # The starter rule's prohibition with another remedy is the starter rule.
    starter = rules(home, "add", "You cannot call torch functions inside a @triton.jit kernel.")
    assert "already there as rule" in starter.stdout

    assert rules(home, "retire", str(rule_id)).returncode == 0
    active = [json.loads(line)["id"] for line in rules(home, "list", "--json").stdout.splitlines()]
    assert rule_id not in active
    every = rules(home, "list", "--all", "--json").stdout.splitlines()
    assert any(
        json.loads(line)["id"] == rule_id and json.loads(line)["status"] == "retired"
        for line in every
    )

    # The starter memory's evidence is listed as failures with the rules they support.
    failures = rules(home, "failures", "--json", "--limit", "3").stdout.splitlines()
    assert failures and all(json.loads(line)["rule_ids"] for line in failures)


def test_export_and_import_through_files_and_pipes(tmp_path):
    source, target = tmp_path / "a", tmp_path / "b"
    rules(source, "add", RULE)
    exported = rules(source, "export", "-").stdout
    assert RULE in exported.splitlines()
    path = tmp_path / "rules.txt"
    assert rules(source, "export", str(path)).returncode == 0
    assert path.read_text() == exported

    imported = rules(target, "import", "-", stdin=exported)
    assert imported.returncode == 0, imported.stderr
    assert rules(target, "export", "-").stdout == exported


def test_bad_input_exits_2_with_what_to_do(tmp_path):
    home = tmp_path / "home"
    bad = rules(home, "add", "Always mask loads.")
    assert bad.returncode == 2 and "You cannot" in bad.stderr
    missing = rules(home, "show", "999999")
    assert missing.returncode == 2 and "rules list --all" in missing.stderr
    broken = rules(home, "import", "-", stdin="Not a rule\n")
    assert (
        broken.returncode == 2
        and "line 1" in broken.stderr
        and "nothing was imported" in broken.stderr
    )
    unreadable = rules(home, "import", str(tmp_path / "nope.txt"))
    assert unreadable.returncode == 2 and "cannot read" in unreadable.stderr


def test_import_reads_adaexplore_memory_with_decimal_supports(tmp_path):
    home = tmp_path / "home"
    general = "You cannot call tl.float32 as a function inside a Triton kernel."
    one_kernel = "You cannot have an `else:` at line 223 of the module source."
    memory = f"{general}||138.0\n{one_kernel}||79.0\n"
    imported = rules(home, "import", "-", stdin=memory)
    assert imported.returncode == 0, imported.stderr
    assert "2 rules added" in imported.stdout
    assert "1 of them name one kernel's lines or variables and stay inactive" in imported.stdout
    listed = [
        json.loads(line) for line in rules(home, "list", "--all", "--json").stdout.splitlines()
    ]
    by_text = {rule["text"]: rule for rule in listed}
    assert (by_text[general]["status"], by_text[general]["support_tasks"]) == ("active", 138)
    assert (by_text[one_kernel]["status"], by_text[one_kernel]["support_tasks"]) == (
        "candidate",
        79,
    )
    negative = rules(home, "import", "-", stdin="You cannot call tl.pow.||-2.0\n")
    assert negative.returncode == 2 and "negative" in negative.stderr
