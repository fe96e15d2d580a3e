"""Triton's helper module is built once by a trusted child and planted in each user-code
process's own cache."""

from __future__ import annotations

import os

import pytest

from adaexplore_mcp.judge.worker import triton_helpers


def _fake_build() -> None:
    """What Triton's driver does on first use: compile its module into the cache."""
    folder = os.path.join(os.environ["TRITON_CACHE_DIR"], "KEY")
    os.makedirs(folder)
    with open(os.path.join(folder, "cuda_utils.so"), "wb") as handle:
        handle.write(b"\x7fELF built by the child")


def test_the_helper_is_built_in_a_child_and_kept_in_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(triton_helpers, "_use_triton_driver", _fake_build)
    files = triton_helpers.build(str(tmp_path))
    assert files == {os.path.join("KEY", "cuda_utils.so"): b"\x7fELF built by the child"}
    assert "TRITON_CACHE_DIR" not in os.environ or not os.environ["TRITON_CACHE_DIR"].startswith(
        str(tmp_path)
    )  # the worker's own environment is untouched: the child set it
    assert not (tmp_path / "triton-helpers").exists()  # nothing left on disk


def test_a_failed_build_plants_nothing(tmp_path, monkeypatch):
    def fails() -> None:
        _fake_build()
        raise RuntimeError("0 active drivers")

    monkeypatch.setattr(triton_helpers, "_use_triton_driver", fails)
    assert triton_helpers.build(str(tmp_path)) == {}


def test_without_a_gpu_driver_there_is_nothing_to_build(tmp_path):
    pytest.importorskip("triton")
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("the interpreter is what this machine runs")
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a GPU machine builds the helper")
    except ImportError:
        pass
    assert triton_helpers.build(str(tmp_path)) == {}


def test_a_build_over_the_size_bound_is_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(triton_helpers, "MAX_BYTES", 4)
    monkeypatch.setattr(triton_helpers, "_use_triton_driver", _fake_build)
    assert triton_helpers.build(str(tmp_path)) == {}


def test_planting_writes_a_copy_into_the_cache(tmp_path):
    cache = tmp_path / "triton"
    triton_helpers.plant({os.path.join("KEY", "cuda_utils.so"): b"module"}, str(cache))
    assert (cache / "KEY" / "cuda_utils.so").read_bytes() == b"module"


@pytest.mark.parametrize("path", ["../escaped.so", "/etc/escaped.so", "KEY/../../escaped.so"])
def test_planting_never_writes_outside_the_cache(tmp_path, path):
    cache = tmp_path / "triton"
    with pytest.raises(ValueError, match="outside the cache"):
        triton_helpers.plant({path: b"module"}, str(cache))
    assert not (tmp_path / "escaped.so").exists()
