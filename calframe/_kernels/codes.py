"""Constants the kernels share with the engines, in a module without numba (importing it loads no kernel)."""

#: lens codes of :func:`calframe._kernels.fused.binned_pass` (calframe.lenses.binary_rule): class:1, class:0, top1
CLASS1, CLASS0, TOP1 = 0, 1, 2

#: the exact engines' fixed point (``calframe.engines.streaming.streamed.fixed_sum``, ``calframe._kernels.exact``): a row's value
#: x in [0, 1] counts as the integer trunc(x * 2^FIXED_BITS) without weights, and trunc(x * 2^(WEIGHTED_BITS +
#: BUCKET_BITS * k)) with them, k in [0, MAX_BUCKET] its weight's bucket
FIXED_BITS, WEIGHTED_BITS, BUCKET_BITS, MAX_BUCKET = 62, 60, 8, 134
