"""``import radt`` under footprint: radT's API for scripts, recording into the run footprint
measures (footprint.radt). Installed with footprint only where radT itself is not."""

from footprint.radt import *  # noqa: F401,F403
from footprint.radt import __all__  # noqa: F401

from . import run  # noqa: E402,F401  (radt.run.RADTBenchmark)
