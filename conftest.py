import os

# Quick mode shrinks the notebooks' and the benchmarks' workloads so the whole suite fits a
# 2-core machine; it applies to every pytest run from this checkout, notebooks included.
# LABKIT_QUICK=0 runs the full sizes.
os.environ.setdefault("LABKIT_QUICK", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
