"""Constants the kernels share with the engines, in a module without numba (importing it loads no kernel)."""

#: lens codes of :func:`calframe._kernels.fused.binned_pass` (calframe.lenses.binary_rule): class:1, class:0, top1
CLASS1, CLASS0, TOP1 = 0, 1, 2
