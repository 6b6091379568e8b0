"""``python3 -m radt [radT's flags] train.py ARGS``: footprint.radt's single-run form."""

import sys

from footprint.radt import main

sys.exit(main(sys.argv[1:], prog="python3 -m radt"))
