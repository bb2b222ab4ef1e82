"""A package for `python -m warm_pkg.probe` (tests/cli/test_launch_warm.py)."""
