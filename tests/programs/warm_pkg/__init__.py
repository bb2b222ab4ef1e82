"""A package for `python -m warm_pkg.probe` (tests/local_job/test_warm.py)."""
