"""warm_probe.py run as `python -m warm_pkg.probe`: its sibling imported relatively."""

import os

import warm_probe

from . import sibling

if __name__ == "__main__":
    import json

    print(json.dumps(warm_probe.describe(globals(), sibling)), flush=True)
    warm_probe.end(int(os.environ["KDIST_RESTART_COUNT"]))
