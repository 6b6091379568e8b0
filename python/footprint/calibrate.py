"""``python3 -m footprint.calibrate OUT.json``: this machine's rates for ``footprint predict
--calibrate`` (docs/prediction.md), measured through PyTorch as footprint's agent runs it (the
threads of ``--threads``, OpenBLAS pinned to them, ``inference_mode``):

- the rate of dense convolutions as a curve over M, the rows of the GEMM each becomes (a
  convolution's output pixels times the batch), and of matrix products over M and their width
  (96 to 768): small M cannot fill the kernels; apart, the convolutions PyTorch runs image by
  image through im2col and the BLAS rather than oneDNN: small 3x3 ones of one image, and on one
  thread the 1x1 ones (their M: one image's pixels), and the 1x1 ones oneDNN runs (16 images:
  there on any thread count), which do a few multiply-accumulates per byte where 3x3 ones do
  many;
- how fast weights stream: a matrix-vector product's as a curve over the weights' size (a
  recurrent cell's gate shape, 4h x h, 256 KiB to 64 MiB: from the caches to memory) and a
  convolution's at one output pixel (9 MiB, reordered for the kernel at every call);
- the wait of a BLAS product that follows an OpenMP parallel region (PyTorch's element-wise
  work above its grain): on more than one thread the two pools take turns on the cores;
- attention's batched products, softmax, layer normalisation, max and average pooling (their
  FLOP rates), depthwise convolutions (their bytes per second), element-wise work and batch
  normalisation (bytes per second as a curve over the tensor's size, 256 KiB to 64 MiB);
- the cost of one operator call (a tiny ``add``), which dominates small models;
- reference models (ResNet-18, MobileNetV3-small, a small ViT), timed and exported to ONNX
  beside OUT.json, so that footprint can state how far its prediction from these rates is off.

Each figure is the fastest of repetitions of about ``--repeat-ms`` (on shared cores, the
least disturbed); on one thread a repetition is timed by that thread's CPU time, which leaves
out the time other processes held the core. ``--quick`` (tests) takes
fewer, shorter repetitions and smaller references. What goes wrong is one line in OUT.json's
``error`` and exit status 2 (no torch: install python3-torch); an interrupt (Ctrl-C) exits 130
and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from typing import Any, Callable

PREFIX = "footprint predict: calibrating:"


def _say(text: str) -> None:
    print(f"{PREFIX} {text}", file=sys.stderr, flush=True)


def _fastest_seconds(fn: Callable[[], Any], repeat_s: float, repeats: int,
                     clock: Callable[[], float]) -> float:
    """The time of one call of `fn` on `clock` in the fastest of `repeats` repetitions of about
    `repeat_s` each (the calls in a repetition are timed together: a call may take
    microseconds). The fastest, not the median: on shared cores another process only ever
    slows a repetition down, and a rate measured while the cores were busy would be set against
    references timed while they were not."""
    fn()
    start = clock()
    fn()
    once = max(clock() - start, 1e-7)
    calls = max(1, int(repeat_s / once))
    times = []
    for _ in range(repeats):
        start = clock()
        for _ in range(calls):
            fn()
        times.append((clock() - start) / calls)
    return min(times)


class Bench:
    def __init__(self, torch: Any, repeat_s: float, repeats: int):
        self.torch, self.repeat_s, self.repeats = torch, repeat_s, repeats
        # On one thread every kernel runs on the calling thread (OpenBLAS and PyTorch pinned to
        # it), so its CPU time is the kernel's time without the slices other processes took:
        # beside two busy loops even the fastest of 15 wall-clock windows of 150 ms was never
        # undisturbed, and the rates moved with the moment. On more threads the workers' time
        # is not the caller's: the wall clock.
        self.clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter

    def time(self, fn: Callable[[], Any]) -> float:
        with self.torch.inference_mode():
            return _fastest_seconds(fn, self.repeat_s, self.repeats, self.clock)


def _dense_rates(b: Bench, quick: bool) -> dict:
    """FLOP/s of 3x3 and 1x1 convolutions (ResNet's stages, MobileNet's pointwise layers) at
    several M, the GEMM's rows, and of matrix products (a transformer's projections, a
    classifier) at several M and widths."""
    torch, F = b.torch, b.torch.nn.functional
    conv, small, pointwise, onednn_pointwise, gemm = [], [], [], [], []
    stages = [(64, 56), (128, 28), (256, 14), (512, 7)]
    if quick:  # the same channels, smaller images
        stages = [(64, 28), (128, 14), (256, 7), (512, 4)]
    # PyTorch (1.13) runs a convolution of one image whose input holds at most 20480 values
    # through im2col and the BLAS, the others through oneDNN: a curve each.
    shapes = [(1, c, s, conv) for c, s in stages] + [(8, c, s, conv) for c, s in stages]
    shapes += [(1, c, s, small) for c, s in ((64, 16), (128, 8), (256, 4), (512, 2))]
    for batch, channels, size, curve in shapes:
        x = torch.randn(batch, channels, size, size)
        w = torch.randn(channels, channels, 3, 3)
        t = b.time(lambda: F.conv2d(x, w, padding=1))
        m = batch * size * size
        curve.append({"m": m, "flops_per_s": 2 * m * channels * channels * 9 / t})
    # On one thread PyTorch runs every 1x1 convolution without stride of fewer than 16 images
    # the same way, image by image: a GEMM of M = the pixels of one image.
    # With 16 images or more (and on more than one thread at any batch) they go to oneDNN,
    # where a 1x1 convolution, a few multiply-accumulates per byte, need not run at a 3x3 one's
    # rate at the same M: a curve of its own, over the pixels of every image.
    for channels, size in ((32, 64), (64, 32), (128, 16), (256, 8), (512, 4)):
        w = torch.randn(channels, channels, 1, 1)
        for images, curve in ((1, pointwise), (16, onednn_pointwise)):
            x = torch.randn(images, channels, size, size)
            t = b.time(lambda: F.conv2d(x, w))
            m = images * size * size
            curve.append({"m": m, "flops_per_s": 2 * m * channels ** 2 / t})
    # Products with weights over M and their width (Swin's first stage is 96 wide, ViT-B 768):
    # a narrow product does fewer multiply-accumulates per value it reads, and a second thread
    # has less to share.
    for width in (96, 192, 384, 768):
        w = torch.randn(width, width)
        for m in (1, 8, 64, 256, 1024):
            x = torch.randn(m, width)
            t = b.time(lambda: F.linear(x, w))
            gemm.append({"m": m, "weight_bytes": 4 * width * width,
                         "flops_per_s": 2 * m * width * width / t})
    return {"conv": _curve(conv), "conv_small": _curve(small), "conv_1x1": _curve(pointwise),
            "conv_1x1_onednn": _curve(onednn_pointwise), "gemm": gemm}


def _curve(points: list) -> list:
    """The points by M, the median rate where several shapes share an M."""
    by_m: dict = {}
    for p in points:
        by_m.setdefault(p["m"], []).append(p["flops_per_s"])
    return [{"m": m, "flops_per_s": statistics.median(r)} for m, r in sorted(by_m.items())]


def _memory_rates(b: Bench, quick: bool) -> dict:
    """Bytes per second: weights streamed by a matrix-vector product (a curve over their
    size), depthwise convolutions and element-wise work (as footprint counts bytes: inputs,
    weights and outputs)."""
    torch, F = b.torch, b.torch.nn.functional
    # A matrix-vector product's weights (a recurrent cell's step at batch 1, a classifier) as a
    # curve over their size: within the caches they stream at several times memory's rate
    # (here, at one thread, 768x768 floats at 76 GB/s, an LSTM's 2048x512 at 15, 64 MiB at 5).
    # The gate shape of a recurrent cell of h units, 4h x h: with a 768-wide product in the
    # caches, a 512-unit LSTM's steps were costed at a fifth of their time.
    weights = []
    for h in (128, 256, 512, 1024) if quick else (128, 256, 512, 1024, 2048):
        w, v = torch.randn(4 * h, h), torch.randn(1, h)
        weights.append({"bytes": w.numel() * 4,
                        "bytes_per_s": w.numel() * 4 / b.time(lambda: F.linear(v, w))})
    # A convolution's weights are reordered for its kernel at every call: they stream slower.
    x, k = torch.randn(1, 512, 1, 1), torch.randn(512, 512, 3, 3)
    conv_stream = k.numel() * 4 / b.time(lambda: F.conv2d(x, k, padding=1))
    dw = []
    for channels, size in ((96, 56), (576, 7)) if not quick else ((96, 16),):
        x, k = torch.randn(1, channels, size, size), torch.randn(channels, 1, 3, 3)
        t = b.time(lambda: F.conv2d(x, k, padding=1, groups=channels))
        dw.append((2 * x.numel() + k.numel()) * 4 / t)
    # Element-wise work and batch normalisation as a curve over the output's size: from the
    # caches to memory, and past glibc's largest heap block (32 MiB) a tensor is mapped afresh
    # at every call and its pages faulted in (here an add of 64 MiB ran at 5 GB/s, of 4 MiB at
    # 74). Batch normalisation: the pass PyTorch makes after most convolutions (folded into
    # them in ONNX).
    elementwise, batchnorm = [], []
    for n in ((1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24) if not quick else (1 << 16, 1 << 22)):
        x, y = torch.randn(n), torch.randn(n)
        elementwise.append({"bytes": 4 * n, "bytes_per_s": 3 * n * 4 / b.time(
            lambda: torch.add(x, y))})
        x, scale = x.view(8, 64, -1), torch.ones(64)
        batchnorm.append({"bytes": 4 * n, "bytes_per_s": 2 * n * 4 / b.time(
            lambda: F.batch_norm(x, scale, scale, scale, scale, False))})
    return {"weights": weights, "conv_weight_stream_bytes_per_s": conv_stream,
            "dwconv_bytes_per_s": statistics.median(dw), "elementwise": elementwise,
            "batchnorm": batchnorm}


def _transformer_rates(b: Bench, quick: bool) -> dict:
    """FLOP/s of attention's batched products (heads x tokens x tokens) as a curve over the
    multiply-accumulates of each head's product (PyTorch runs one GEMM per head and image, and
    OpenBLAS runs one of at most 262144 on one thread: Swin's 7x7 windows are below, ViT's
    tokens above), of softmax (5 FLOPs per element, as footprint counts it) and of layer
    normalisation (7 per element)."""
    torch, F = b.torch, b.torch.nn.functional
    heads, dim = 12, 64
    attention = []
    for tokens in (16, 32, 64, 128, 197):
        q, k = torch.randn(heads, tokens, dim), torch.randn(heads, dim, tokens)
        each = tokens * tokens * dim
        attention.append({"macs": each, "flops_per_s": 2 * heads * each / b.time(
            lambda: torch.matmul(q, k))})
    tokens = 65 if quick else 197
    s = torch.randn(heads, tokens, tokens)
    softmax = 5 * s.numel() / b.time(lambda: torch.softmax(s, -1))
    x = torch.randn(tokens, 768)
    layernorm = 7 * x.numel() / b.time(lambda: F.layer_norm(x, (768,)))
    return {"attention": attention, "softmax_flops_per_s": softmax,
            "layernorm_flops_per_s": layernorm}


def _pool_rates(b: Bench) -> dict:
    """Kernel elements per second of max and average pooling (3x3, stride 2, as ResNet's and
    SqueezeNet's): PyTorch's loops run them at a fraction of a GFLOP/s whatever the shape
    (here max 0.23, average 0.5-0.7), several times slower than their bytes would take; at
    batch 8, 28 % of SqueezeNet's time."""
    F = b.torch.nn.functional
    x = b.torch.randn(1, 64, 56, 56)
    kernel_elements = F.max_pool2d(x, 3, 2).numel() * 9
    return {"maxpool_flops_per_s": kernel_elements / b.time(lambda: F.max_pool2d(x, 3, 2)),
            "avgpool_flops_per_s": kernel_elements / b.time(lambda: F.avg_pool2d(x, 3, 2))}


def _blas_after_openmp(b: Bench) -> float:
    """Seconds a BLAS product waits when it follows an OpenMP parallel region: an element-wise
    add above PyTorch's grain (32768 elements), then a product above OpenBLAS's threshold for
    threads (262144 multiply-accumulates), timed in turns, less the two timed alone. On more
    than one thread PyTorch's OpenMP workers spin after their region on the cores OpenBLAS's
    threads need (one of each beside the caller: three threads for two cores); on one thread
    there are no workers, and footprint predict counts none."""
    torch, F = b.torch, b.torch.nn.functional
    x, a, w = torch.randn(1 << 18), torch.randn(64, 768), torch.randn(768, 768)
    both = b.time(lambda: (torch.add(x, x), F.linear(a, w)))
    return max(0.0, both - b.time(lambda: torch.add(x, x)) - b.time(lambda: F.linear(a, w)))


def _overhead(b: Bench) -> float:
    """Seconds of one operator call on a tensor too small to cost anything but the call."""
    x, y = b.torch.randn(1), b.torch.randn(1)
    return b.time(lambda: b.torch.add(x, y))


def vision_transformer(resolution: int, layers: int, heads: int, width: int) -> Any:
    """torchvision's ViT with 16x16 patches and an MLP 4x `width`: the calibration's small
    reference (4 layers, 4 heads, 256 wide) and DeiT-Ti's shape (12, 3, 192; without its
    distillation token) in footprint predict's datasets."""
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=resolution, patch_size=16, num_layers=layers,
                             num_heads=heads, hidden_dim=width, mlp_dim=4 * width)


def recurrent_classifier(torch: Any) -> Any:
    """The recurrent family of footprint predict's datasets and benchmark: a 2-layer LSTM (256
    features in, 512 hidden) over the sequence, then a classifier on its last step. Input:
    (batch, steps, 256)."""

    class LSTMClassifier(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(256, 512, num_layers=2, batch_first=True)
            self.head = torch.nn.Linear(512, 10)

        def forward(self, x: Any) -> Any:
            return self.head(self.lstm(x)[0][:, -1])

    return LSTMClassifier().eval()


def _references(b: Bench, torchvision: Any, folder: str, quick: bool) -> list:
    """The reference models, each timed at its batches and exported to ONNX (batch dynamic)."""
    torch = b.torch
    resolution = 64 if quick else 128
    builders = {"resnet18": lambda: torchvision.models.resnet18(weights=None),
                "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(weights=None),
                "vit_small": lambda: vision_transformer(resolution, 4, 4, 256)}
    found = []
    for name, build in builders.items():
        model = build().eval()
        path = os.path.join(folder, f"{name}-{resolution}.onnx")
        with warnings.catch_warnings():  # the tracer's about ViT's shape checks
            warnings.simplefilter("ignore")
            torch.onnx.export(model, torch.randn(1, 3, resolution, resolution), path,
                              input_names=["input"], output_names=["output"],
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                              opset_version=13)
        for batch in ((1,) if quick else (1, 8)):
            x = torch.randn(batch, 3, resolution, resolution)
            latency = b.time(lambda: model(x))
            found.append({"model": name, "onnx": path, "batch": batch, "resolution": resolution,
                          "latency_s": latency})
            _say(f"{name} at batch {batch}, {resolution}x{resolution}: {latency * 1e3:.2f} ms")
    return found


def _pin_threads(torch: Any, threads: int) -> None:
    torch.set_num_threads(threads)
    # torch.set_num_threads leaves Debian's OpenBLAS on one thread per core: pinned as the
    # agent pins it, so that the rates are those of the threads the agent measures with.
    from footprint.agent import _openblas
    for blas in _openblas():
        blas.openblas_set_num_threads(torch.get_num_threads())


def calibrate(args: argparse.Namespace) -> dict:
    try:
        import torch
        import torchvision
    except ImportError as e:
        raise CalibrationError(f"--calibrate: PyTorch does not load in {sys.executable} ({e}): install "
                               f"python3-torch and python3-torchvision (apt-get install "
                               f"python3-torch python3-torchvision)") from e
    started, cpu_started = time.monotonic(), time.process_time()
    _pin_threads(torch, args.threads)
    torch.manual_seed(0)
    b = Bench(torch, args.repeat_ms / 1e3, 7 if args.quick else 9)
    from footprint.agent import describe
    record = {"version": 3, "quick": args.quick, "threads": torch.get_num_threads(),
              "machine": describe(torch.device("cpu"))}
    _say("matrix products and convolutions")
    record["rates"] = _dense_rates(b, args.quick)
    _say("memory: weights, depthwise convolutions, element-wise")
    record["rates"].update(_memory_rates(b, args.quick))
    _say("attention, softmax, layer normalisation, pooling")
    record["rates"].update(_transformer_rates(b, args.quick))
    record["rates"].update(_pool_rates(b))
    record["rates"]["operator_overhead_s"] = _overhead(b)
    record["rates"]["blas_after_openmp_s"] = _blas_after_openmp(b)
    _say("reference models")
    record["references"] = _references(b, torchvision, os.path.dirname(args.out) or ".",
                                       args.quick)
    record["wall_s"] = time.monotonic() - started
    record["cpu_s"] = time.process_time() - cpu_started
    return record


class CalibrationError(Exception):
    pass


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m footprint.calibrate")
    parser.add_argument("out", help="the JSON file to write (the ONNX references beside it)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true",
                        help="fewer, shorter repetitions, references at 64x64 (tests)")
    parser.add_argument("--repeat-ms", type=float, default=None)
    args = parser.parse_args(argv)
    if args.repeat_ms is None:
        args.repeat_ms = 10 if args.quick else 60
    try:
        record = calibrate(args)
    except KeyboardInterrupt:
        return 130
    except CalibrationError as e:
        record = {"error": str(e)}
    with open(args.out + ".part", "w") as f:
        json.dump(record, f)
    os.replace(args.out + ".part", args.out)
    return 2 if "error" in record else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
