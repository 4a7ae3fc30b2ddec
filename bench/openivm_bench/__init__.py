"""openivm benchmark suite: incremental refresh against recompute, measured in the same run.

Modules: core (connections, timing, correctness checks, the run loop), star, tpch, manyviews
(one per workload), report (markdown, CSV, plots) and targets (PASS/MISS lines).
"""
