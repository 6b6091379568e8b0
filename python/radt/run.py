"""``radt.run``: radT's benchmark context and metric functions (footprint.radt)."""

from footprint.radt import RADTBenchmark, log_metric, log_metrics  # noqa: F401
