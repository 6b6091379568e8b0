"""``import umlaut`` under footprint: UMLAUT's API (footprint.umlaut), recording into a footprint
database, so that an UMLAUT pipeline runs with no edit. Installed with footprint only where
UMLAUT itself is not (python/CMakeLists.txt)."""

# footprint's package says, when it cannot load here, which interpreter it was built for.
from footprint.umlaut import *  # noqa: F401,F403
from footprint.umlaut import __all__  # noqa: F401
