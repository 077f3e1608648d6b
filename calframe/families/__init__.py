"""The public functions, one module per family of figures, on Polars and pandas frames (eager and lazy), and
the engines they hand their parsed calls to. :mod:`calframe.api` is their public face: it adds the Dask and
narwhals dispatch and the fork check to each (docs/design.md, "The seam").

- :mod:`.plan`: running a parsed call (:func:`.plan.run`), or planning it (:func:`calframe.disparity`);
- :mod:`.binned`: the CE family, smooth ECE, the companions, ``summary``, ``disparity``, ``reliability``;
- :mod:`.variable`: VECE / VMCE, ``vece_rank`` and VCE curves (Kelly & Smyth);
- :mod:`.gece`: the generalized ECE (Kirchenbauer et al.);
- :mod:`.local`: local calibration, LCE / MLCE (Luo et al.);
- :mod:`.recal`: ``fit``, ``apply`` and ``load``; :mod:`.applying` the rows' side of ``apply`` (what every
  engine runs per batch or partition);
- :mod:`.verdict`: ``calibration_test``.
"""
