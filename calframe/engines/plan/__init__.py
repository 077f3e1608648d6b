"""The plan shared by the engines that sum where the rows are from Polars-like expressions (the streaming
and native engines): :mod:`.base` (the plan, its expressions and checks), and the passes of the states both run:
:mod:`.order_stats` (exact order statistics for data-dependent bins), :mod:`.grid_sums` (the smooth ECE's grids),
:mod:`.row_means` (the companions, summary, disparity's figures per group) and :mod:`.vector_sums` (GECE's cells).
"""
