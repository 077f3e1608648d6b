"""How the threads of a plain (not ``parallel=True``) kernel share out its chunks: :func:`take`.

A kernel run on several threads at once (:func:`calframe._jit.on_threads`) loops ``c = take(counter)`` until
``c`` passes its number of chunks; each chunk is summed into its own partial table, and the tables are added in
chunk order afterwards, so which thread took which chunk never shows in the bits.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def take(typingctx, counter):
    """``counter[0] += 1`` as one atomic step (an int64 array): the value before, the chunk the calling thread
    takes."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64 and counter.mutable):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [context.get_constant(types.intp, 0)])
        return builder.atomic_rmw("add", ptr, context.get_constant(types.int64, 1), "monotonic")

    return types.int64(counter), codegen
