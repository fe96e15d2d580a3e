import os
import stat

from adaexplore_mcp.rundir import read_events, write_json, write_text


def test_run_files_get_the_users_usual_mode_and_no_temporary_is_left(tmp_path):
    mask = os.umask(0o022)
    try:
        write_text(tmp_path / "a" / "reply.txt", "hello")
        write_json(tmp_path / "a" / "step.json", {"step": 1})
    finally:
        os.umask(mask)
    for name in ("reply.txt", "step.json"):
        mode = stat.S_IMODE((tmp_path / "a" / name).stat().st_mode)
        assert mode == 0o644, oct(mode)  # mkstemp made them 0600: unreadable to the team
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["reply.txt", "step.json"]


def test_a_last_line_cut_by_a_crash_is_ignored(tmp_path):
    (tmp_path / "events.jsonl").write_text('{"task": "t", "step": 1')
    assert read_events(tmp_path) == []
