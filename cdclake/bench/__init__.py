"""Benchmarks of every format through the pipeline (``python -m cdclake.bench``, ``make bench``).

Modules: :mod:`model` (the change stream), :mod:`generate` (landing files per format),
:mod:`bareparse` (the parse-only limit), :mod:`stages` (the pipeline, step by step),
:mod:`naive` (a straightforward Spark job to compare with), :mod:`pairs` (ours against it:
warm-ups until steady, timed pairs, best-of-N and medians), :mod:`compare` (lake tables
against the expected rows), :mod:`memory`, :mod:`merge_curve`, :mod:`scale` (one large
file), :mod:`report` (markdown).
"""
