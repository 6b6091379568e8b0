"""``python3 -m footprint.agent``: a PyTorch agent that serves a model through footprint load's
line protocol (docs/evaluation.md), so that a model can be put under MLPerf's scenarios without
writing a server::

    footprint load --scenario server --qps 20 -- \\
        python3 -m footprint.agent --model resnet18 --max-batch 8

The model is ``torchvision.models.MODEL(**MODEL_ARGS, weights=None)`` (nothing is downloaded)
or a TorchScript file (``--model-file``), in eval mode on ``--device``. The inputs are a pool of
``--pool`` seeded synthetic tensors of ``--shape`` (or ``--resolution``), or the images of a
folder (``--inputs``, every file sorted by name) made into tensors by ``--preprocess``. Sample
index i is input ``i % pool``. The agent runs one warm-up batch and says ``ready``; anything
wrong before that is one line on stderr and exit status 2.

Then it answers queries: it takes the first waiting query and whatever else is already
waiting, up to ``--max-batch`` samples, runs them as one batch (dynamic batching, as inference
servers do; in the single and multi scenarios one query is outstanding at a time, so a batch is
that query), and answers ``ID<TAB>RESULT`` for each query, from its first sample's output
(``--postprocess``). With ``--trace-framework``, once the load is over (so that no query pays
for the profiler), it profiles ``--trace-batches`` batches with torch.profiler and reports the
operators that took the most time.

``footprint evaluate`` keeps one agent for every run of a manifest: between loads it sends
``#run<TAB>{JSON}`` (a new ``--max-batch``, warmed up at once, and the run to join) and
``#end`` (the load is over: its trace goes into that run), each answered with ``ready``.

Inside ``footprint load`` (or ``footprint run``) it joins the run through the Python API:
each batch is a scope ``inference`` (its size as the value ``batch_size``; on a GPU it ends
when the GPU has finished the batch); the value
``framework`` holds what ``--describe`` prints plus the model and input settings, and
``framework.operators`` the profiler's operators.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import queue
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn, Optional, Sequence

DEFAULT_PREPROCESS = [{"resize": 256}, {"center_crop": 224}, "to_tensor",
                      {"normalize": "imagenet"}]
NORMALIZATIONS = {"imagenet": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}
TOP_OPERATORS = 30  # stored in framework.operators
TABLE_OPERATORS = 10  # printed on stderr

Answer = Callable[[Any], list]  # a [queries, classes] tensor -> one RESULT string per query


class AgentError(Exception):
    """A refusal before ``ready``: one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, like every other refusal: footprint evaluate shows it as the reason.
        sys.stderr.write(f"footprint.agent: {message}\n")
        sys.exit(2)


@contextlib.contextmanager
def _refusing(what: str) -> Iterator[None]:
    """Turns whatever fails in the block into an AgentError `what: first line of the error`:
    torch's and PIL's messages run over several lines, the protocol wants one."""
    try:
        yield
    except AgentError:
        raise
    except Exception as e:  # whatever fails before ready is a refusal, not a traceback
        lines = str(e).strip().splitlines()
        raise AgentError(f"{what}: {lines[0] if lines else type(e).__name__}") from e


def _json_of(kind: type, name: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise argparse.ArgumentTypeError(f"not JSON ({e})") from None
        if not isinstance(value, kind):
            raise argparse.ArgumentTypeError(f"not a JSON {name}: {text}")
        return value
    return parse


def _shape(text: str) -> tuple[int, ...]:
    dims = text.split(",")
    if not all(d.strip().isdigit() and int(d) > 0 for d in dims):
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive integers, e.g. 3,224,224")
    return tuple(int(d) for d in dims)


def _postprocessor(spec: str) -> Answer:
    """The RESULT of each row of a [queries, classes] output, as --postprocess names it."""
    if spec == "argmax":
        return lambda out: [str(c) for c in out.argmax(dim=1).tolist()]
    if spec == "softmax":
        def best(out: Any) -> list:
            # The class from the logits: near-equal logits can round to equal probabilities.
            c = out.argmax(dim=1, keepdim=True)
            p = out.softmax(dim=1).gather(1, c)
            return [f"{ci}:{pi:.4f}" for ci, pi in zip(c.flatten().tolist(), p.flatten().tolist())]
        return best
    name, _, k = spec.partition(":")
    if name == "topk" and k.isdigit() and int(k) > 0:
        return lambda out: [",".join(map(str, row))
                            for row in out.topk(int(k), dim=1).indices.tolist()]
    raise ValueError(f"unknown --postprocess {spec!r}: expected argmax, topk:K or softmax")


def _parser() -> _Parser:
    p = _Parser(prog="python3 -m footprint.agent", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    model = p.add_mutually_exclusive_group()
    model.add_argument("--model", help="a torchvision.models builder (default resnet18)")
    model.add_argument("--model-file", type=Path, metavar="PATH",
                       help="a TorchScript file instead")
    p.add_argument("--model-args", type=_json_of(dict, "object"), default={}, metavar="JSON",
                   help="keyword arguments of the builder, e.g. '{\"num_classes\": 10}'")
    p.add_argument("--shape", type=_shape, metavar="C,H,W", help="synthetic input shape")
    p.add_argument("--resolution", type=int, metavar="R",
                   help="synthetic inputs of 3,R,R (default 224)")
    p.add_argument("--pool", type=int, default=64, metavar="N",
                   help="synthetic inputs made in advance (default 64)")
    p.add_argument("--inputs", type=Path, metavar="DIR", help="a folder of images instead")
    p.add_argument("--preprocess", type=_json_of(list, "list"), metavar="JSON",
                   help="steps from an image to a tensor: {\"resize\": N}, {\"center_crop\": "
                        "N}, \"to_tensor\", {\"normalize\": \"imagenet\" or {\"mean\": [..], "
                        "\"std\": [..]}} (default: resize 256, crop 224, tensor, imagenet)")
    p.add_argument("--postprocess", default="argmax", metavar="KIND",
                   help="each answer: argmax (the class, default), topk:K (K classes, best "
                        "first) or softmax (CLASS:PROBABILITY)")
    p.add_argument("--max-batch", type=int, default=1, metavar="N",
                   help="samples per forward pass, at most (default 1)")
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="torch threads (default 0: torch's choice)")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]")
    p.add_argument("--seed", type=int, default=0, help="seeds the weights and inputs")
    p.add_argument("--trace-framework", action="store_true",
                   help="once the load is over, profile --trace-batches batches of "
                        "--max-batch samples with torch.profiler; report the top operators")
    p.add_argument("--trace-batches", type=int, default=50, metavar="N",
                   help="batches --trace-framework profiles (default 50)")
    p.add_argument("--describe", action="store_true",
                   help="print the framework and device as one line of JSON, and exit")
    return p


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = _parser()
    args = p.parse_args(argv)
    if args.model_file is None and args.model is None:
        args.model = "resnet18"
    for key in ("weights", "weights_backbone"):  # both would download
        if args.model_args.get(key) is not None:
            p.error(f"{key} must be null: nothing can be downloaded")
    if args.model_args and args.model_file is not None:
        p.error("--model-args is for --model, not --model-file")
    if args.inputs is not None and (args.shape or args.resolution):
        p.error("--inputs takes its shape from --preprocess, not --shape or --resolution")
    if args.preprocess is not None and args.inputs is None:
        p.error("--preprocess is for --inputs")
    if args.shape and args.resolution:
        p.error("--shape and --resolution both give the input shape: use one")
    if args.trace_batches < 1:
        p.error("--trace-batches must be at least 1")
    if args.max_batch < 1 or args.pool < 1 or (args.resolution or 16) < 16:
        p.error("--max-batch and --pool must be at least 1, --resolution at least 16")
    try:
        args.answer = _postprocessor(args.postprocess)
    except ValueError as e:
        p.error(str(e))
    args.shape = args.shape or (3, args.resolution or 224, args.resolution or 224)
    if args.preprocess is None:
        args.preprocess = DEFAULT_PREPROCESS
    return args


def _set_up_torch(args: argparse.Namespace) -> Any:
    """The device, with torch's threads and seed set."""
    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    # torch.set_num_threads leaves OpenBLAS on its own count (Debian's torch: one per core), so
    # a "1 thread" measurement would run its GEMMs on every core: pinned to torch's count.
    for blas in _openblas():
        blas.openblas_set_num_threads(torch.get_num_threads())
    torch.manual_seed(args.seed)
    with _refusing(f"bad --device {args.device!r}"):
        device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise AgentError(f"--device {args.device}: CUDA is not available")
    return device


def _device_name(device: Any) -> Optional[str]:
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or None


def _blas() -> list:
    """torch's BLAS and LAPACK as its build configuration names them: the lines about them,
    and the BLAS_INFO and LAPACK_INFO entries of the (very long) build settings line."""
    import torch

    found = []
    for line in torch.__config__.show().splitlines():
        line = line.strip(" -")
        if line.startswith("Build settings:"):
            found += [s.strip() for s in line.partition(":")[2].split(",")
                      if s.strip().startswith(("BLAS_INFO=", "LAPACK_INFO="))]
        elif "BLAS" in line or "LAPACK" in line:
            found.append(line)
    return found


def _blas_library() -> Optional[str]:
    """The BLAS this process loaded (Debian's torch says only BLAS_INFO=generic, and which
    library the alternatives system picked makes a 3-25x difference)."""
    with contextlib.suppress(OSError), open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "blas" in os.path.basename(path).lower():
                return os.path.realpath(path)
    return None


# The ISA flags of /proc/cpuinfo that decide which kernels a BLAS or torch runs (the list of
# src/predict/machine.h: footprint predict compares them with the machine it runs on).
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
             "amx_tile", "asimd", "sve")


def _isa() -> list:
    flags: set = set()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            key, _, value = line.partition(":")
            if key.strip() in ("flags", "Features"):
                flags.update(value.split())
    return sorted(f for f in ISA_FLAGS if f in flags)


def _openblas() -> list:
    """The OpenBLAS libraries this process loaded (Debian's libblas.so.3 of openblas-pthread is
    one, beside libopenblas itself), through ctypes: none where the BLAS is another."""
    import ctypes

    found, paths = [], set()
    with contextlib.suppress(OSError), open("/proc/self/maps") as maps:
        paths = {os.path.realpath(line.split()[-1]) for line in maps
                 if "blas" in os.path.basename(line.split()[-1]).lower()}
    for path in sorted(paths):
        with contextlib.suppress(OSError):
            lib = ctypes.CDLL(path)
            if hasattr(lib, "openblas_get_corename"):
                lib.openblas_get_corename.restype = ctypes.c_char_p
                lib.openblas_get_config.restype = ctypes.c_char_p
                found.append(lib)
    return found


def _openblas_state() -> dict:
    """OpenBLAS's kernel (Haswell, Prescott: OPENBLAS_CORETYPE or the CPU decides), threads and
    build, asked of the library; None each where the BLAS is not OpenBLAS."""
    libs = _openblas()
    if not libs:
        return {"blas_kernel": None, "blas_threads": None, "blas_config": None}
    lib = libs[0]
    return {"blas_kernel": lib.openblas_get_corename().decode().strip(),
            "blas_threads": lib.openblas_get_num_threads(),
            "blas_config": lib.openblas_get_config().decode().strip()}


def describe(device: Any) -> dict:
    """The framework, its build and the device: what --describe prints."""
    import torch
    import torchvision

    return {"framework": "pytorch", "version": torch.__version__,
            "torchvision": torchvision.__version__, "python": platform.python_version(),
            "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(), "device": str(device),
            "device_name": _device_name(device), "blas": _blas(),
            "blas_library": _blas_library(), **_openblas_state(), "isa": _isa(),
            "cores": len(os.sched_getaffinity(0)),
            "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "cuda": torch.version.cuda}


def _model(args: argparse.Namespace, device: Any) -> Any:
    import torch
    import torchvision

    if args.model_file is not None:
        with _refusing(f"cannot load TorchScript file {args.model_file}"):
            return torch.jit.load(str(args.model_file), map_location=device).eval()
    builder = getattr(torchvision.models, args.model, None)
    if builder is None or not callable(builder):
        raise AgentError(f"torchvision has no model '{args.model}'")
    with _refusing(f"cannot build {args.model}"):
        return builder(**{**args.model_args, "weights": None}).eval().to(device)


def _transform_step(step: Any) -> Any:
    from torchvision import transforms

    unknown = AgentError(f"unknown --preprocess step {json.dumps(step)}: expected resize, "
                         "center_crop, to_tensor or normalize")
    if step == "to_tensor":
        return transforms.ToTensor()
    if not isinstance(step, dict) or len(step) != 1:
        raise unknown
    [(name, arg)] = step.items()
    if name == "resize":
        return transforms.Resize(arg)
    if name == "center_crop":
        return transforms.CenterCrop(arg)
    if name == "normalize":
        stats = NORMALIZATIONS.get(arg) if isinstance(arg, str) else arg
        if not isinstance(stats, dict) or not {"mean", "std"} <= stats.keys():
            raise AgentError(f"unknown normalization {json.dumps(arg)}: expected \"imagenet\" "
                             "or {\"mean\": [...], \"std\": [...]}")
        return transforms.Normalize(stats["mean"], stats["std"])
    raise unknown


def _transform(steps: list) -> Callable[[Any], Any]:
    from torchvision import transforms

    if "to_tensor" not in steps:
        raise AgentError("--preprocess makes no tensor: add \"to_tensor\"")
    made = []
    for step in steps:
        with _refusing(f"bad --preprocess step {json.dumps(step)}"):
            made.append(_transform_step(step))
    return transforms.Compose(made)


def _load_image(path: Path, transform: Callable[[Any], Any]) -> Any:
    from PIL import Image

    with _refusing(f"cannot read image {path}"), Image.open(path) as image:
        rgb = image.convert("RGB")
    with _refusing(f"cannot preprocess {path}"):
        return transform(rgb)


def _folder_inputs(folder: Path, steps: list, device: Any) -> Any:
    """The images of `folder`, preprocessed, as one [images, ...] tensor on `device`."""
    import torch

    if not folder.is_dir():
        raise AgentError(f"--inputs {folder}: not a folder")
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise AgentError(f"--inputs {folder}: no image in it")
    transform = _transform(steps)
    tensors = [_load_image(path, transform) for path in files]
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) > 1:
        raise AgentError(f"the images of {folder} differ in shape after --preprocess "
                         f"({', '.join(map(str, sorted(shapes)))}): resize and crop them")
    return torch.stack(tensors).to(device)


def _warm_up(model: Any, pool: Any, args: argparse.Namespace) -> None:
    """One batch through the model and the postprocessing, so that neither fails on a query
    and the first query pays for no lazy initialisation."""
    import torch

    with torch.inference_mode():
        with _refusing(f"the warm-up batch of {tuple(pool.shape[1:])} inputs failed"):
            out = model(pool[: args.max_batch])
        if not isinstance(out, torch.Tensor) or out.dim() != 2:
            kind = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise AgentError(f"the model's output is {kind}, not a [batch, classes] tensor")
        with _refusing(f"--postprocess {args.postprocess}"):
            args.answer(out)


def _prepare(args: argparse.Namespace, device: Any) -> tuple[Any, Any]:
    """The model and the input pool, warmed up."""
    import torch

    model = _model(args, device)
    if args.inputs is not None:
        pool = _folder_inputs(args.inputs, args.preprocess, device)
    else:
        pool = torch.randn(args.pool, *args.shape, device=device)
    _warm_up(model, pool, args)
    return model, pool


def _join(args: argparse.Namespace, device: Any, pool: Any) -> Any:
    """The run of the enclosing footprint load, or None outside one."""
    if not os.environ.get("FOOTPRINT_RUN_ID"):
        return None
    try:
        import footprint as fp
    except ImportError as e:  # a Python that footprint's module was not built for
        print(f"footprint.agent: not joining the run: {e}", file=sys.stderr)
        return None
    bm = fp.Benchmark()
    bm.log_json("framework", {
        **describe(device), "model": args.model,
        "model_file": None if args.model_file is None else str(args.model_file),
        "model_args": args.model_args,
        "inputs": None if args.inputs is None else str(args.inputs),
        "preprocess": None if args.inputs is None else args.preprocess,
        "shape": list(pool.shape[1:]), "pool": len(pool), "max_batch": args.max_batch,
        "postprocess": args.postprocess, "trace_framework": args.trace_framework})
    return bm


Line = Optional[tuple[str, Any]]  # (ID, samples), ("#run", settings), ("#end", None); None: EOF


def _reader(lines: "queue.Queue[Line]") -> None:
    """Queries and control lines from stdin into `lines`; None at the end."""
    for line in sys.stdin:
        head, _, payload = line.rstrip("\n").partition("\t")
        if head.startswith("#"):  # footprint evaluate's resident agent, between two loads
            lines.put((head, json.loads(payload) if payload else None))
            continue
        samples = [int(s) for s in payload.split(",") if s]
        lines.put((head, samples or [0]))
    lines.put(None)


def _gather(lines: "queue.Queue[Line]", max_batch: int) -> Optional[list]:
    """The first waiting query and whatever else is already waiting, up to `max_batch`
    samples, or a control line alone; None once stdin has ended. footprint sends a control
    line only when no query is outstanding, so none waits behind a batch."""
    first = lines.get()
    if first is None or first[0].startswith("#"):
        return None if first is None else [first]
    batch, size = [first], len(first[1])
    while size < max_batch:
        try:
            more = lines.get_nowait()
        except queue.Empty:
            break
        if more is None:
            lines.put(None)  # the end, for the next call once this batch is answered
            break
        batch.append(more)
        size += len(more[1])
    return batch


def _control(kind: str, settings: Any, model: Any, pool: Any, args: argparse.Namespace,
             device: Any, bm: Any) -> Any:
    """A control line of footprint evaluate, which keeps the agent for every batch size of a
    model (src/run/resident_command.h); the run joined after it. ``#run``: the load's settings
    (``max_batch``, warmed up at once) and the run to join; ``#end``: the load is over, its
    trace (--trace-framework) goes into its run, which the agent then leaves. ``ready`` once
    done."""
    if kind == "#run":
        args.max_batch = int(settings.get("max_batch", args.max_batch))
        if device.type == "cuda":  # what earlier batches cached is not this run's memory
            import torch
            torch.cuda.empty_cache()
        _warm_up(model, pool, args)
        os.environ.update({"FOOTPRINT_RUN_ID": settings["run_id"], "FOOTPRINT_DB": settings["db"],
                           "FOOTPRINT_T0_NS": str(settings["t0_ns"])})
        bm = _join(args, device, pool)
    elif kind == "#end":
        if args.trace_framework:
            _trace(model, pool, args, device, bm)
        if bm is not None:
            bm.close()
        bm = None
    print("ready", flush=True)
    return bm


def _serve(model: Any, pool: Any, args: argparse.Namespace, device: Any, bm: Any) -> bool:
    """Answers the queries of stdin until it ends; whether footprint evaluate sent control
    lines (each load's trace is then done)."""
    import torch

    lines: "queue.Queue[Line]" = queue.Queue()
    threading.Thread(target=_reader, args=(lines,), daemon=True).start()
    resident = False
    while (batch := _gather(lines, args.max_batch)) is not None:
        if batch[0][0].startswith("#"):
            resident = True
            bm = _control(*batch[0], model, pool, args, device, bm)
            continue
        samples = [s % len(pool) for _, query in batch for s in query]
        firsts = list(itertools.accumulate([len(query) for _, query in batch[:-1]], initial=0))
        indices = torch.tensor(samples, device=pool.device)
        with bm.scope("inference") if bm is not None else contextlib.nullcontext():
            out = model(pool[indices])
            if pool.is_cuda:  # the scope ends when the GPU is done, not when the launches are
                torch.cuda.synchronize(pool.device)
        if bm is not None:
            bm.log("batch_size", float(len(samples)))
        results = args.answer(out[firsts])
        sys.stdout.write("".join(f"{qid}\t{r}\n" for (qid, _), r in zip(batch, results)))
        sys.stdout.flush()
    return resident


def _profile(model: Any, pool: Any, args: argparse.Namespace, device: Any) -> dict:
    """The operators of --trace-batches batches of --max-batch samples under torch.profiler,
    run once the load is over: profiling the load itself would charge its overhead (and the
    ~0.1 s per batch it takes to stop) to the queries."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    indices = torch.arange(args.max_batch, device=pool.device) % len(pool)
    with torch.inference_mode(), profile(activities=activities, record_shapes=False) as prof:
        for _ in range(args.trace_batches):
            model(pool[indices])
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    return _operators(prof, device.type == "cuda", args.trace_batches)


def _operator(event: Any, cuda: bool) -> dict:
    """One operator of key_averages(), its times (microseconds there) in seconds."""
    op = {"name": event.key, "calls": event.count, "self_cpu_s": event.self_cpu_time_total / 1e6,
          "cpu_total_s": event.cpu_time_total / 1e6}
    if cuda:  # torch 2.4 renamed the CUDA times device times; the old names are deprecated
        self_us = getattr(event, "self_device_time_total", None)
        op["self_cuda_s"] = (event.self_cuda_time_total if self_us is None else self_us) / 1e6
    return op


def _operators(prof: Any, cuda: bool, batches: int) -> dict:
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    return {"sort": "self_cpu_time",
            "operators": [_operator(e, cuda) for e in events[:TOP_OPERATORS]],
            "profiled_batches": batches}


def _print_operators(report: dict) -> None:
    rows = report["operators"][:TABLE_OPERATORS]
    cuda = bool(rows) and "self_cuda_s" in rows[0]
    out = [f"footprint.agent: top operators by self CPU time over "
           f"{report['profiled_batches']} batches",
           f"  {'operator':<40} {'calls':>8} {'self CPU s':>11} {'CPU total s':>11}"
           + (f" {'self CUDA s':>11}" if cuda else "")]
    for op in rows:
        out.append(f"  {op['name'][:40]:<40} {op['calls']:>8} {op['self_cpu_s']:>11.4f} "
                   f"{op['cpu_total_s']:>11.4f}"
                   + (f" {op['self_cuda_s']:>11.4f}" if cuda else ""))
    print("\n".join(out), file=sys.stderr)


def _trace(model: Any, pool: Any, args: argparse.Namespace, device: Any, bm: Any) -> None:
    """--trace-framework: the profile on stderr and, in a run, as ``framework.operators``."""
    report = _profile(model, pool, args, device)
    _print_operators(report)
    if bm is not None:
        bm.log_json("framework.operators", report)


def _end_output() -> None:
    """Every query is answered: ends footprint load's wait for the output, which it cuts short
    with SIGTERM after 10 s, while the profile's summary can take longer. fd 1 becomes
    /dev/null rather than closed, so that no file opened later takes its number."""
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parse(argv)
    import torch  # after the options: --help and their refusals need not wait for it

    try:
        device = _set_up_torch(args)
        if args.describe:
            print(json.dumps(describe(device)), flush=True)
            return 0
        model, pool = _prepare(args, device)
    except AgentError as e:
        print(f"footprint.agent: {e}", file=sys.stderr)
        return 2
    bm = _join(args, device, pool)
    with torch.inference_mode():
        print("ready", flush=True)
        resident = _serve(model, pool, args, device, bm)
    _end_output()
    if args.trace_framework and not resident:
        _trace(model, pool, args, device, bm)
    if bm is not None:
        bm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
