"""footprint: measure the computational footprint (time, CPU, memory, I/O) of Python code.

::

    import footprint as fp

    bm = fp.Benchmark("KAI.db", description="Benchmark custom scripts.")

    @fp.supervise([fp.Memory(interval=0.1), fp.CPU(interval=0.1), fp.Time()], bm,
                  name="training step")
    def train(): ...

    with bm.scope("load data"):
        ...
    fp.LossTracker(bm).track(0.25, step=3)
    bm.close()  # also at the end of a `with` block and at interpreter exit

    data = fp.load("KAI.db")  # runs, samples, scopes, values, totals, artifacts (DataFrames)

Under ``footprint run`` (or ``python3 -m footprint run -- script.py``) a Benchmark joins that
run, so scopes and values land beside the whole process tree's series. See docs/python.md.
"""



def _cannot_load(error: ImportError) -> str:
    """Why footprint's compiled module does not load in this interpreter, and what to run
    instead: scripts (UMLAUT's, radT's) call ``python``, which may be another interpreter than
    the one the module was built for."""
    import glob
    import os
    import sys
    package = os.path.dirname(os.path.abspath(__file__))
    built = [os.path.basename(p) for p in glob.glob(os.path.join(package, "_footprint*.so"))]
    module = (f"its compiled module there, {' '.join(built)}, is built for another interpreter"
              if built else f"{package} holds no compiled module (_footprint) for it")
    return (f"footprint (and its umlaut and radt packages) does not load in this Python "
            f"({sys.executable}, {sys.version.split()[0]}): {error}; {module}. Run the "
            f"script with the python3 footprint was built for (cmake -DFOOTPRINT_PYTHON, by "
            f"default /usr/bin/python3), or build footprint for this one with "
            f"-DFOOTPRINT_PYTHON={sys.executable}")


try:
    from ._footprint import FootprintError, __version__
except ImportError as _error:
    raise ImportError(_cannot_load(_error)) from _error
from ._benchmark import Benchmark, Scope, supervise
from ._data import Data, load
from .metrics import (CPU, GPU, IO, Energy, FootprintWarning, GPUMemory, GPUPower, GPUTime,
                      Latency, Memory, Metric, Power, Processes, SystemCPU, SystemMemory,
                      Threads, Throughput, Time)
from .profiling import profile
from .trackers import ConfusionMatrixTracker, HyperparameterTracker, LossTracker, TTATracker

__all__ = [
    "Benchmark", "Scope", "supervise", "load", "Data", "FootprintError", "FootprintWarning",
    "Metric", "Time", "CPU", "Memory", "IO", "Threads", "Processes", "SystemCPU",
    "SystemMemory", "Latency", "Throughput", "GPU", "GPUMemory", "GPUPower", "GPUTime",
    "Power", "Energy", "LossTracker", "TTATracker", "ConfusionMatrixTracker",
    "HyperparameterTracker", "profile", "__version__",
]
