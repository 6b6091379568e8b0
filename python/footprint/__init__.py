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

from ._footprint import FootprintError, __version__
from ._benchmark import Benchmark, Scope, supervise
from ._data import Data, load
from .metrics import (CPU, GPU, IO, Energy, FootprintWarning, GPUMemory, GPUPower, GPUTime,
                      Latency, Memory, Metric, Power, Processes, SystemCPU, SystemMemory,
                      Threads, Throughput, Time)
from .trackers import ConfusionMatrixTracker, HyperparameterTracker, LossTracker, TTATracker

__all__ = [
    "Benchmark", "Scope", "supervise", "load", "Data", "FootprintError", "FootprintWarning",
    "Metric", "Time", "CPU", "Memory", "IO", "Threads", "Processes", "SystemCPU",
    "SystemMemory", "Latency", "Throughput", "GPU", "GPUMemory", "GPUPower", "GPUTime",
    "Power", "Energy", "LossTracker", "TTATracker", "ConfusionMatrixTracker",
    "HyperparameterTracker", "__version__",
]
