#!/usr/bin/python3
"""What a footprint.profile window costs, and that the steps outside it cost nothing.

    /usr/bin/python3 bench/profile_window_bench.py [--build DIR] [--rounds R] [--json FILE]

One process, one model (a 64-256-1 MLP on a batch of 512, Debian's PyTorch on the CPU), R
rounds; each round trains 60 steps plainly and 60 in a window, in alternating order, so that
they share the machine's state (same run baseline):

  plain     the loop with no footprint.profile at all;
  outside   the loop inside footprint.profile(wait=20, warmup=1, active=2): the 57 steps
            outside its window (torch's profiler idle there);
  inside    the 3 steps of that window (warm-up and recorded).

It prints the median step time of each (over all rounds' steps) and the ratio outside/plain,
which should be 1 within the noise: a loop without a window costs the same as before.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS, WAIT, WARMUP, ACTIVE = 60, 20, 1, 2


def import_footprint(build: str) -> None:
    path = Path(build) if os.path.isabs(build) else ROOT / build
    sys.path.insert(0, str(path / "python"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json")
    args = parser.parse_args()
    import_footprint(args.build)
    import torch
    import footprint

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(512, 64), torch.randn(512, 1)

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    times: dict[str, list[float]] = {"plain": [], "outside": [], "inside": []}
    window = set(range(WAIT, WAIT + WARMUP + ACTIVE))
    def plain() -> None:
        for _ in range(STEPS):
            start = time.perf_counter()
            step()
            times["plain"].append(time.perf_counter() - start)

    def profiled() -> None:
        with footprint.profile("bench", wait=WAIT, warmup=WARMUP, active=ACTIVE) as prof:
            for k in range(STEPS):
                start = time.perf_counter()
                step()
                prof.step()
                times["inside" if k in window else "outside"].append(time.perf_counter() - start)

    for r in range(args.rounds):  # the order alternates: neither always runs first
        for variant in (plain, profiled) if r % 2 == 0 else (profiled, plain):
            variant()
    medians = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    result = {"median_step_ms": medians, "outside_over_plain": medians["outside"] / medians["plain"],
              "rounds": args.rounds, "torch": torch.__version__,
              "load_average": os.getloadavg()[0]}
    for name, ms in medians.items():
        print(f"{name:8s} {ms:8.3f} ms per step (median of {len(times[name])})")
    print(f"outside / plain = {result['outside_over_plain']:.3f} "
          f"(load average {result['load_average']:.2f})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
