"""An unaligned 8-byte load from an address, for numba kernels that compare strings in Arrow buffers in place.

``load_word(addr)`` is the uint64 of the 8 bytes at integer address ``addr`` (any alignment; byte 0 the
lowest on the little-endian machines calframe runs on, as the uint64 views of Arrow's string views already
assume). The caller keeps the buffer alive and every byte read inside it: calframe._kernels.fused reads
the bytes of a string of an Arrow ``string_view`` array, within the bounds the view gives.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def load_word(typingctx, addr):
    """The 8 bytes at integer address ``addr`` as a uint64 (an LLVM load with alignment 1)."""
    if not isinstance(addr, types.Integer):
        return None
    sig = types.uint64(addr)

    def codegen(context, builder, signature, args):
        at = context.cast(builder, args[0], signature.args[0], types.intp)
        return builder.load(builder.inttoptr(at, ir.IntType(64).as_pointer()), align=1)

    return sig, codegen
