"""A sibling module of warm_pkg.probe (imported relatively)."""

WORD = "package sibling"
