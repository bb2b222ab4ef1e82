"""The `kdist` command line: `main` (the parser), `doctor`, `launch` and `bench`.

The top of the house: it may import any wing, and nothing imports it (but
`kdist.__main__`). Importing it imports neither JAX nor the compiled core.
"""
