"""A software prefetch hint for numba kernels that visit rows out of order.

``prefetch(a, i, j)`` asks the CPU to start loading the cache line holding
``a[i, j]`` (LLVM's ``llvm.prefetch``: read, high locality, data cache). It
has no effect on results: it is a hint, and out-of-range addresses do not
fault. Kernels that walk a list of row numbers (``adaptive.split_pass``)
issue it a few dozen rows ahead, so the loads of scattered rows overlap
instead of each waiting for memory in turn; that made the adaptive binning's
level passes about 1.5x faster at 1e6 rows (docs/benchmarks.md).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# The unsuffixed name (LLVM < 10's) is upgraded by LLVM's IR reader to the mangled one of
# whichever pointer kind the LLVM in use has ("p0i8" typed, "p0" opaque), so one name
# serves every llvmlite numba supports.
_NAME = "llvm.prefetch"


@intrinsic
def prefetch(typingctx, arr, i, j):
    """Prefetch hint for the cache line of ``arr[i, j]`` (2-d array, integer indices)."""
    sig = types.void(arr, i, j)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, args[k], signature.args[k], types.intp) for k in (1, 2)]
        ptr = cgutils.get_item_pointer2(
            context, builder, ary.data, cgutils.unpack_tuple(builder, ary.shape),
            cgutils.unpack_tuple(builder, ary.strides), aryty.layout, idx,
        )
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), _NAME)
        # (address, read = 0, locality = 3: keep in all cache levels, data cache = 1)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen
