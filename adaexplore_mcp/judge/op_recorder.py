"""Which torch operators a forward dispatches outside its Triton launches. Runs inside the
sandboxed child."""

from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode

# Torch operators a forward may call besides its Triton kernels: allocation, views, reshapes,
# copies and conversions. Anything else (a matmul, a reduction, an activation) is the
# computation itself and belongs in a kernel. Documented in docs/integrity.md.
GLUE_OPS = frozenset(
    {
        # allocation
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        "fill",
        "fill_",
        "zero_",
        "arange",
        "scalar_tensor",
        "lift_fresh",
        "lift_fresh_copy",
        "resize_",
        # views and layout
        "view",
        "_unsafe_view",
        "_reshape_alias",
        "reshape",
        "as_strided",
        "expand",
        "permute",
        "transpose",
        "t",
        "squeeze",
        "unsqueeze",
        "flatten",
        "unflatten",
        "slice",
        "select",
        "narrow",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "alias",
        "detach",
        "view_as_real",
        "view_as_complex",
        # copies and conversions
        "clone",
        "contiguous",
        "copy_",
        "_to_copy",
        "to",
        "cat",
        "stack",
        "constant_pad_nd",
        "_local_scalar_dense",
        "record_stream",
        # size and stride queries
        "sym_size",
        "sym_stride",
        "sym_numel",
        "sym_storage_offset",
        "is_contiguous",
        "is_same_size",
    }
)


class OpRecorder(TorchDispatchMode):
    """Counts every operator outside ``GLUE_OPS`` into ``counts``, except while
    ``in_launch[0]`` is set (Triton's own torch calls during a launch)."""

    def __init__(self, counts: dict[str, int], in_launch: list[int]) -> None:
        super().__init__()
        self.counts = counts
        self.in_launch = in_launch

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.in_launch[0]:
            name = func.overloadpacket.__name__
            if name not in GLUE_OPS:
                self.counts[name] = self.counts.get(name, 0) + 1
        return func(*args, **(kwargs or {}))
