"""``python3 -m footprint.agent``: a PyTorch agent that serves a torchvision model through
footprint load's line protocol (docs/evaluation.md), so that a model can be put under MLPerf's
scenarios without writing a server::

    footprint load --scenario server --qps 20 -- \\
        python3 -m footprint.agent --model resnet18 --max-batch 8

It builds ``torchvision.models.MODEL(weights=None)`` (no download), puts it in eval mode on
the chosen device, makes a pool of synthetic inputs (``--resolution``, seeded), runs one
warm-up batch, and says ``ready``. Then it answers queries: it takes the first waiting query
and whatever else is already waiting, up to ``--max-batch`` samples, runs them as one batch
(dynamic batching, as inference servers do; in the single and multi scenarios one query is
outstanding at a time, so a batch is that query), and answers ``ID<TAB>CLASS`` for each
query (the arg-max of its first sample's logits). Sample index i is input ``i % --pool``.

Inside ``footprint load`` (or ``footprint run``) it joins the run through the Python API:
each batch is a scope ``inference`` (its size as the value ``batch_size``), and the framework,
its version, the threads and the BLAS are stored as hyperparameters of the run.
"""

from __future__ import annotations

import argparse
import os
import queue
import sys
import threading
from typing import Optional, Sequence


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m footprint.agent",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet18",
                   help="a torchvision.models builder, e.g. resnet18, mobilenet_v3_small")
    p.add_argument("--resolution", type=int, default=224, help="input height and width")
    p.add_argument("--max-batch", type=int, default=1, help="samples per forward pass, at most")
    p.add_argument("--pool", type=int, default=64, help="synthetic inputs made in advance")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's choice)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.max_batch < 1 or args.pool < 1 or args.resolution < 16:
        p.error("--max-batch and --pool must be at least 1, --resolution at least 16")
    return args


def _reader(lines: "queue.Queue[Optional[tuple[str, list[int]]]]") -> None:
    """Queries from stdin into `lines`; None at the end."""
    for line in sys.stdin:
        qid, _, payload = line.rstrip("\n").partition("\t")
        samples = [int(s) for s in payload.split(",") if s]
        lines.put((qid, samples or [0]))
    lines.put(None)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parse(argv)
    import torch
    import torchvision

    builder = getattr(torchvision.models, args.model, None)
    if builder is None or not callable(builder):
        print(f"footprint.agent: torchvision has no model '{args.model}'", file=sys.stderr)
        return 2
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    model = builder(weights=None).eval().to(device)
    pool = torch.randn(args.pool, 3, args.resolution, args.resolution, device=device)

    bm = None
    if os.environ.get("FOOTPRINT_RUN_ID"):  # inside footprint load: join its run
        import footprint as fp

        bm = fp.Benchmark()
        blas = [line.strip() for line in torch.__config__.show().splitlines()
                if "BLAS_INFO" in line or "LAPACK_INFO" in line]
        bm.log_json("framework", {"name": "torch", "version": torch.__version__,
                                  "torchvision": torchvision.__version__,
                                  "threads": torch.get_num_threads(), "device": str(device),
                                  "model": args.model, "resolution": args.resolution,
                                  "max_batch": args.max_batch, "build": blas})

    with torch.inference_mode():
        model(pool[: min(args.max_batch, args.pool)])  # warm-up, before ready
        print("ready", flush=True)
        lines: "queue.Queue[Optional[tuple[str, list[int]]]]" = queue.Queue()
        threading.Thread(target=_reader, args=(lines,), daemon=True).start()
        done = False
        while not done:
            first = lines.get()
            if first is None:
                break
            batch = [first]
            size = len(first[1])
            while size < args.max_batch:
                try:
                    more = lines.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    done = True
                    break
                batch.append(more)
                size += len(more[1])
            indices = torch.tensor([s % args.pool for _, samples in batch for s in samples])
            if bm is not None:
                with bm.scope("inference"):
                    logits = model(pool[indices.to(device)])
                bm.log("batch_size", float(len(indices)))
            else:
                logits = model(pool[indices.to(device)])
            classes = logits.argmax(dim=1).tolist()
            answers, at = [], 0
            for qid, samples in batch:
                answers.append(f"{qid}\t{classes[at]}\n")
                at += len(samples)
            sys.stdout.write("".join(answers))
            sys.stdout.flush()
    if bm is not None:
        bm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
