"""`python -m kdist`: the same command line as the `kdist` console script."""

import sys

from kdist._cli.main import main

if __name__ == "__main__":
    sys.exit(main())
