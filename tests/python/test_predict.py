"""footprint predict: the ONNX graph's FLOPs against torchvision's published counts, bad files
and dynamic shapes refused with one line, unknown operators counted and named, the MIG profile
for a GPU, predictors that recover a known law, and a train -> predict round trip on the
committed dataset."""

from __future__ import annotations

import csv
import json
import random

import pytest

from fp_python import REPO, run_footprint

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
onnx = pytest.importorskip("onnx")

DATASET = REPO / "data" / "predict" / "cpu.csv"


def export(tmp_path, builder, resolution=224, dynamic=True):
    path = tmp_path / f"{builder}-{resolution}.onnx"
    if not path.exists():
        model = getattr(torchvision.models, builder)(weights=None).eval()
        axes = {"input": {0: "batch"}, "logits": {0: "batch"}} if dynamic else None
        torch.onnx.export(model, torch.randn(1, 3, resolution, resolution), str(path),
                          input_names=["input"], output_names=["logits"], dynamic_axes=axes,
                          opset_version=13)
    return path


def write_rows(path, rows):
    """A dataset of `rows` (dicts of one set of columns) at `path`."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def predict(*args):
    proc = run_footprint("predict", "--json", *map(str, args))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def refused(proc):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("footprint: "), proc.stderr
    return lines[0]


# torchvision's model cards (weights.meta["_ops"], GFLOPS counted as multiply-adds) and
# parameter counts; the export folds batch normalisation into the convolutions. ShuffleNetV2's
# channel shuffle and the transformers compute shapes in the graph (Shape -> Gather -> Div ->
# Concat -> Reshape; Mod and Pad for Swin's windows): what follows is counted only if those are
# evaluated.
@pytest.mark.parametrize("builder, gmacs, mparams", [
    ("resnet50", 4.09, 25.56), ("resnet18", 1.81, 11.69), ("mobilenet_v2", 0.30, 3.50),
    ("shufflenet_v2_x1_0", 0.145, 2.28), ("vit_b_16", 17.56, 86.57), ("swin_t", 4.49, 28.29),
    ("maxvit_t", 5.56, 30.92),  # 44 Einsums in its attention, with spaces in their equations
])
def test_multiply_accumulates_match_torchvision(tmp_path, builder, gmacs, mparams):
    f = predict("--features", "--batch", 1, export(tmp_path, builder))
    assert f["macs"] / 1e9 == pytest.approx(gmacs, rel=0.01)
    assert f["param_bytes"] / 4 / 1e6 == pytest.approx(mparams, rel=0.01)
    assert f["unknown_operators"] == {} and f["assumptions"] == []
    # Eight samples: eight times the work, the same weights.
    f8 = predict("--features", "--batch", 8, export(tmp_path, builder))
    assert f8["macs"] == pytest.approx(8 * f["macs"], rel=1e-9)
    assert f8["param_bytes"] == f["param_bytes"]
    assert f8["features"]["peak_activation_bytes"] > f["features"]["peak_activation_bytes"]


def test_depthwise_convolutions_are_a_kind_of_their_own(tmp_path):
    # Counted by PyTorch itself: every Conv2d with one input channel per group does, per output
    # element, kernel-size multiply-accumulates (plus the bias the export folds in from the
    # batch normalisation that follows it).
    model = torchvision.models.mobilenet_v2(weights=None).eval()
    depthwise = []

    def count(module, _, out):  # (outputs, multiply-accumulates)
        depthwise.append((out.numel(), out.numel() * module.kernel_size[0] * module.kernel_size[1]))

    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d) and m.groups > 1 and m.groups == m.in_channels:
            m.register_forward_hook(count)
    with torch.no_grad():
        model(torch.randn(1, 3, 96, 96))
    outputs, macs = map(sum, zip(*depthwise))
    f = predict("--features", "--batch", 1, export(tmp_path, "mobilenet_v2", 96))["features"]
    assert f["count.dwconv"] == len(depthwise) == 17
    assert f["flops.dwconv"] == pytest.approx(2 * macs + outputs, rel=1e-9)


def test_bad_files_and_dynamic_shapes_are_one_line(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(bytes(random.Random(1).randrange(256) for _ in range(4096)))
    assert "not an ONNX model" in refused(run_footprint("predict", str(garbage), "--batch", "1"))
    model = export(tmp_path, "mobilenet_v3_small", 64)
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    assert "not an ONNX model" in refused(run_footprint("predict", str(cut), "--batch", "1"))
    assert "cannot read" in refused(run_footprint("predict", str(tmp_path / "none.onnx")))
    line = refused(run_footprint("predict", str(model)))
    assert "input 'input' has a dynamic first dimension ('batch'): give the batch size" in line


def custom_model(tmp_path, ops=("Relu", "Swoosh", "Relu")):
    """A chain of `ops` over a [2, 8] tensor; Swoosh, of the domain "lab", has no formula."""
    from onnx import TensorProto, helper

    names = ["x"] + [f"t{i}" for i in range(len(ops))]
    graph = helper.make_graph(
        [helper.make_node(op, [a], [b], domain="lab" if op == "Swoosh" else "")
         for op, a, b in zip(ops, names, names[1:])], "custom",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, [2, 8])],
        value_info=[helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 8])
                    for n in names[1:-1]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("lab", 1)])
    path = tmp_path / f"custom-{len(ops)}.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_an_unknown_operator_is_counted_named_and_given_a_fallback(tmp_path):
    f = predict("--features", custom_model(tmp_path))
    assert f["unknown_operators"] == {"Swoosh": 1}
    assert f["op_counts"] == {"Relu": 2, "Swoosh": 1}
    assert f["flops"] == 16 * 3  # each operator: one operation per output element


def test_an_operator_without_a_formula_makes_the_latency_a_lower_bound(tmp_path):
    path = custom_model(tmp_path, ("Relu", "Swoosh", "Swoosh", "Relu"))
    proc = run_footprint("predict", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    p = json.loads(proc.stdout)
    assert p["lower_bound"] is True
    assert p["latency_s"]["lower_bound"] is True and "low" not in p["latency_s"]
    assert "high" not in p["latency_s"] and p["latency_s"]["value"] > 0
    warnings = [line for line in proc.stderr.splitlines() if "cost formula" in line]
    assert warnings == ["footprint predict: warning: 2 operator(s) without a cost formula "
                        "(Swoosh x2), each counted as one operation per output element: "
                        "latency and energy are lower bounds, without a band"]
    text = run_footprint("predict", str(path))
    assert "latency at least " in text.stdout and "cost formula" in text.stderr
    # Every operator known: a band, no lower bound.
    known = predict(custom_model(tmp_path, ("Relu", "Relu")))
    assert known["lower_bound"] is False and "low" in known["latency_s"]


def test_a_graph_of_unknown_operators_only_is_refused_in_one_line(tmp_path):
    path = custom_model(tmp_path, ("Swoosh", "Swoosh", "Swoosh"))
    line = refused(run_footprint("predict", str(path)))
    assert "none of its 3 operators has a cost formula (Swoosh x3)" in line, line
    assert predict("--features", path)["unknown_operators"] == {"Swoosh": 3}


def test_a_gpu_without_measurements_gets_the_smallest_mig_profile_that_holds_the_model(tmp_path):
    p = predict(export(tmp_path, "resnet18"), "--batch", 8, "--device", "A100-40GB")
    assert p["mig_profile"]["name"] == "1g.5gb" and p["mig_profile"]["compute_slices"] == 1
    assert p["latency_s"] is None and "no measurements on A100-40GB" in p["latency_reason"]
    assert any("GPU memory = weights" in a for a in p["assumptions"])
    line = refused(run_footprint("predict", str(export(tmp_path, "resnet18")), "--batch", "1",
                                 "--device", "V100"))
    assert "--device V100" in line


def write_law(path, device=None, no_energy=()):
    """A dataset that follows a known law exactly: latency = 2 ms + 1 ns per FLOP, memory =
    300 MB + 1.5 x weights and, with a device, energy = 0.5 J + 2 nJ per FLOP (left blank in
    the rows numbered in `no_energy`)."""
    rng = random.Random(7)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["family", "model", "split", "latency_s", "latency_cv", "peak_memory_bytes",
                    "flops", "flops.conv", "param_bytes", "peak_activation_bytes", "operators"]
                   + (["energy_j", "device"] if device else []))
        for i in range(60):
            flops, params = rng.uniform(1e8, 1e10), rng.uniform(1e6, 5e8)
            activations, operators = rng.uniform(1e5, 1e8), rng.randint(20, 400)  # no effect
            w.writerow([f"F{i % 6}", f"m{i}", "train", 0.002 + flops * 1e-9, 0.01,
                        3e8 + 1.5 * params, flops, flops, params, activations, operators]
                       + ([0.5 + flops * 2e-9 if i not in no_energy else "", device]
                          if device else []))
    return path


def test_the_predictors_recover_a_known_law(tmp_path):
    path = write_law(tmp_path / "law.csv", device="NVIDIA H100 80GB HBM3")
    report = json.loads(run_footprint("predict", "--evaluate", str(path), "--json").stdout)
    assert report["latency"]["flops_linear"]["leave_one_family_out"]["mean_family_mape_pct"] < 0.1
    assert report["latency"]["roofline"]["leave_one_family_out"]["mean_family_mape_pct"] < 0.5
    assert report["peak_memory"]["memory_linear"]["leave_one_family_out"][
        "mean_family_mape_pct"] < 0.1
    assert report["energy"]["flops_linear"]["leave_one_family_out"]["mean_family_mape_pct"] < 0.1
    cpu = json.loads(run_footprint("predict", "--evaluate", str(write_law(tmp_path / "c.csv")),
                                   "--json").stdout)
    assert "energy" not in cpu  # no energy column: none evaluated, none made up
    # On a CPU the roofline also has a term for the weights streamed (param_bytes): this law's
    # latency does not depend on them, and the fit finds so.
    assert cpu["latency"]["roofline"]["leave_one_family_out"]["mean_family_mape_pct"] < 0.5


def test_energy_is_fitted_on_the_rows_that_have_it(tmp_path):
    # A load window shorter than the counter's period leaves a row without its energy: the
    # energy predictors are fitted and scored on the others, never on a made-up zero.
    law = write_law(tmp_path / "law.csv", device="NVIDIA H100 80GB HBM3", no_energy=range(5))
    report = json.loads(run_footprint("predict", "--evaluate", str(law), "--json").stdout)
    energy = report["energy"]["flops_linear"]["leave_one_family_out"]
    assert energy["rows"] == 55 and energy["mean_family_mape_pct"] < 0.1
    assert report["latency"]["flops_linear"]["leave_one_family_out"]["rows"] == 60
    out = tmp_path / "p.json"
    assert run_footprint("predict", "--train", str(law), "--out", str(out)).returncode == 0
    model = export(tmp_path, "resnet18", 128)
    f = predict("--features", model, "--batch", 4)
    p = predict(model, "--batch", 4, "--device", "H100-80GB", "--predictor", out)
    assert p["energy_j"]["value"] == pytest.approx(0.5 + f["flops"] * 2e-9, rel=0.01)


@pytest.mark.parametrize("device,smallest", [("H200-141GB", "1g.18gb"), ("H100-80GB", "1g.10gb")])
def test_the_shipped_gpu_predictors_answer_for_their_gpu(tmp_path, device, smallest):
    p = predict(export(tmp_path, "resnet18"), "--batch", 1, "--device", device)
    assert p["predictor"]["file"].endswith(f"{device.lower()}-predictor.json")
    with open(REPO / "data" / "predict" / f"{device.lower()}.csv") as f:
        [row] = [r for r in csv.DictReader(f) if r["model"] == "resnet18" and r["batch"] == "1"]
    # Measured with NVML on that GPU: the process tree's GPU memory, CUDA's context included.
    assert p["peak_memory_bytes"]["value"] == pytest.approx(float(row["peak_memory_bytes"]),
                                                            rel=0.2)
    assert p["latency_s"]["low"] < p["latency_s"]["value"] < p["latency_s"]["high"]
    assert p["energy_j"]["value"] > 0 and p["mig_profile"]["name"] == smallest


def test_a_predictor_trained_on_a_gpu_predicts_energy_there_and_only_there(tmp_path):
    law, out = write_law(tmp_path / "law.csv", device="NVIDIA H100 80GB HBM3"), tmp_path / "p.json"
    proc = run_footprint("predict", "--train", str(law), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    trained = json.loads(out.read_text())
    assert trained["device"] == "H100-80GB"
    assert trained["training_set"]["measured_on"] == "NVIDIA H100 80GB HBM3"
    assert trained["machine"] == {}  # a GPU predictor names its GPU, not the host's CPU
    model = export(tmp_path, "resnet18", 128)
    f = predict("--features", model, "--batch", 4)
    p = predict(model, "--batch", 4, "--device", "H100-80GB", "--predictor", out)
    assert p["energy_j"]["value"] == pytest.approx(0.5 + f["flops"] * 2e-9, rel=0.01)
    assert p["latency_s"]["value"] == pytest.approx(0.002 + f["flops"] * 1e-9, rel=0.01)
    memory = p["peak_memory_bytes"]["value"]
    assert memory == pytest.approx(3e8 + 1.5 * f["param_bytes"], rel=0.01)
    assert p["mig_profile"]["name"] == "1g.10gb"  # 0.37 GB with a 10 % margin
    line = refused(run_footprint("predict", str(model), "--batch", "4", "--predictor", str(out)))
    assert "trained on H100-80GB, not cpu" in line
    line = refused(run_footprint("predict", str(model), "--batch", "4", "--device", "A100-40GB",
                                 "--predictor", str(out)))
    assert "trained on H100-80GB, not A100-40GB" in line


def test_rows_of_several_devices_train_the_one_named(tmp_path):
    gpu = write_law(tmp_path / "gpu.csv", device="NVIDIA H100 80GB HBM3").read_text()
    cpu = write_law(tmp_path / "cpu.csv", device="cpu").read_text()
    mixed = tmp_path / "mixed.csv"
    mixed.write_text(gpu + "".join(cpu.splitlines(keepends=True)[1:]))
    for device, expected in (("cpu", "cpu"), ("H100-80GB", "H100-80GB")):
        out = tmp_path / f"{device}.json"
        proc = run_footprint("predict", "--train", str(mixed), "--device", device, "--out",
                             str(out))
        assert proc.returncode == 0, proc.stderr
        assert f"the rows measured on {expected} only" in proc.stdout
        trained = json.loads(out.read_text())
        assert trained["device"] == expected and trained["training_set"]["rows"] == 60
    line = refused(run_footprint("predict", "--train", str(mixed), "--device", "A100-40GB"))
    assert "rows measured on H100-80GB, cpu, none on A100-40GB" in line


def test_train_then_predict_round_trip(tmp_path):
    out = tmp_path / "mine.json"
    proc = run_footprint("predict", "--train", str(DATASET), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    trained = json.loads(out.read_text())
    assert trained["latency"]["predictor"]["kind"] in ("flops_linear", "roofline", "trees")
    assert set(trained["training_set"]["families"]) >= {"ResNet", "MobileNet"}
    p = predict(export(tmp_path, "resnet18", 128), "--batch", 1, "--predictor", out)
    assert p["predictor"]["file"] == str(out)
    low, value, high = (p["latency_s"][k] for k in ("low", "value", "high"))
    assert 0 < low < value < high
    # The measured row of the same model, batch and resolution in the dataset.
    with open(DATASET) as f:
        [row] = [r for r in csv.DictReader(f) if r["model"] == "resnet18"
                 and r["resolution"] == "128" and r["batch"] == "1"]
    assert value == pytest.approx(float(row["latency_s"]), rel=0.5)
    assert p["peak_memory_bytes"]["value"] == pytest.approx(float(row["peak_memory_bytes"]),
                                                            rel=0.2)


def test_without_its_module_predict_says_so_in_one_line(tmp_path):
    import subprocess

    from fp_python import child_env, footprint_command

    env = child_env(FOOTPRINT_PREDICT_MODULE=str(tmp_path / "none.so"))
    proc = subprocess.run(footprint_command() + ["predict", "x.onnx"], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 125
    [line] = proc.stderr.splitlines()
    assert "cannot load the predict module" in line and "FOOTPRINT_PREDICT_MODULE" in line


def test_a_predictor_file_that_is_not_one_is_refused_in_one_line(tmp_path):
    model = export(tmp_path, "mobilenet_v3_small", 64)
    for text in ('{"version": 2}', '{"latency": {"predictor": {"kind": "roofline", '
                 '"terms": ["1", "flops"], "coefficients": []}}}', "[1, 2]",
                 # NaN is written as null; a number given as text
                 '{"latency": {"predictor": {"kind": "flops_linear", "terms": ["1", "flops"], '
                 '"coefficients": [0.1, 1e-9]}, "held_out_families": {"p80_relative_error": '
                 'null}}, "peak_memory": {"predictor": {"kind": "memory_linear", "terms": ["1"],'
                 ' "coefficients": [1]}}, "version": 2}'):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        line = refused(run_footprint("predict", str(model), "--batch", "1", "--predictor",
                                     str(bad)))
        assert "predictor" in line, line


def test_a_predictor_of_another_version_is_refused_with_what_to_do(tmp_path):
    # Version 1 counted depthwise convolutions as "conv": its coefficients would be read
    # against features that no longer mean what they were fitted on.
    model = export(tmp_path, "mobilenet_v3_small", 64)
    trained = json.loads((REPO / "data" / "predict" / "cpu-predictor.json").read_text())
    trained["version"] = 1
    old = tmp_path / "old.json"
    old.write_text(json.dumps(trained))
    line = refused(run_footprint("predict", str(model), "--batch", "1", "--predictor", str(old)))
    assert "version 1" in line and "version 3" in line and "--train" in line, line
    # Version 2 has no machine record: read, and said to be of an unrecorded machine.
    trained["version"] = 2
    del trained["machine"]
    old.write_text(json.dumps(trained))
    proc = run_footprint("predict", str(model), "--batch", "1", "--predictor", str(old))
    assert proc.returncode == 0 and "fitted on an unrecorded machine" in proc.stderr


def this_machine(model):
    """The machine predict finds here, as a predictor fitted here on one thread records it."""
    return {**predict(model, "--batch", "1")["machine"]["here"], "threads": 1}


def machine_predictor(tmp_path, name, **changes):
    """The shipped CPU predictor with the machine predict finds here as its record, changed by
    `changes` (blas_kernel: the BLAS kernel's)."""
    model = export(tmp_path, "mobilenet_v3_small", 64)
    machine = this_machine(model)
    kernel = changes.pop("blas_kernel", None)
    machine.update(changes)
    if kernel:
        machine["blas"]["kernel"] = kernel
    trained = json.loads((REPO / "data" / "predict" / "cpu-predictor.json").read_text())
    trained.update(version=3, machine=machine)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(trained))
    return model, path


def machine_warnings(proc):
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stderr.splitlines() if "fitted on" in line]


def test_a_predictor_of_another_machine_warns_on_every_call(tmp_path):
    model, same = machine_predictor(tmp_path, "same")
    p80 = json.loads(same.read_text())["latency"]["held_out_families"]["p80_relative_error"]
    proc = run_footprint("predict", "--json", str(model), "--batch", "1", "--predictor", str(same))
    assert machine_warnings(proc) == []
    p = json.loads(proc.stdout)
    assert p["machine"]["matches"] is True
    # The held-out band, widened by the model's novelty (its factor is 1 where it is 0).
    factor = (1 + p80) * p["novelty"]["band_factor"]
    assert p["latency_s"]["high"] == pytest.approx(p["latency_s"]["value"] * factor)
    _, other = machine_predictor(tmp_path, "other", cpu_model="Intel Xeon 9999",
                                 blas_kernel="Prescott")
    for _ in range(2):  # every call, in text and in JSON
        for json_flag in ([], ["--json"]):
            proc = run_footprint("predict", *json_flag, str(model), "--batch", "1",
                                 "--predictor", str(other))
            [line] = machine_warnings(proc)
            assert line.startswith("footprint predict: warning: the predictor was fitted on "
                                   "another machine (CPU 'Intel Xeon 9999' there, '"), line
            assert "BLAS kernel Prescott there" in line and "footprint predict --calibrate" in line
    p = json.loads(proc.stdout)
    assert p["machine"]["matches"] is False and len(p["machine"]["differences"]) == 2
    assert p["latency_s"]["high"] == pytest.approx(p["latency_s"]["value"] * 5.3)
    assert p["latency_s"]["low"] == pytest.approx(p["latency_s"]["value"] / 5.3)
    # Peak memory does not depend on the CPU: its band stays.
    assert p["peak_memory_bytes"]["high"] < 1.5 * p["peak_memory_bytes"]["value"]


def test_another_blas_kernel_is_another_machine(tmp_path):
    # OpenBLAS picks its kernel by the CPU, or by OPENBLAS_CORETYPE: the same CPU running its
    # SSE3 kernels is 17x slower on a GEMM (issue 39), so the same record no longer matches.
    import subprocess

    from fp_python import child_env, footprint_command

    model, same = machine_predictor(tmp_path, "same")
    blas = json.loads(same.read_text())["machine"].get("blas")
    if not blas:
        pytest.skip("no OpenBLAS here")
    # What OpenBLAS itself says its kernel is under OPENBLAS_CORETYPE=Prescott, asked apart.
    ask = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); "
           "lib.openblas_get_corename.restype = ctypes.c_char_p; "
           "print(lib.openblas_get_corename().decode().strip())")
    kernel = subprocess.run(["/usr/bin/python3", "-c", ask, blas["library"]], check=True,
                            env=child_env(OPENBLAS_CORETYPE="Prescott"), capture_output=True,
                            text=True).stdout.strip()
    if kernel == blas["kernel"]:
        pytest.skip(f"OpenBLAS runs {kernel} whatever OPENBLAS_CORETYPE says (no DYNAMIC_ARCH)")
    proc = subprocess.run(footprint_command() + ["predict", str(model), "--batch", "1",
                                                 "--predictor", str(same)],
                          env=child_env(OPENBLAS_CORETYPE="Prescott"), capture_output=True,
                          text=True)
    [line] = machine_warnings(proc)
    assert f"BLAS kernel {blas['kernel']} there, {kernel} here" in line, line


def test_training_records_the_machine_its_rows_share(tmp_path):
    rows = list(csv.DictReader(open(DATASET)))[:40]
    for r in rows:
        r.update(cpu_model="AMD EPYC", isa="avx2 fma", cores=2, blas_kernel="Zen",
                 blas_threads=1)
    data = write_rows(tmp_path / "data.csv", rows)
    out = tmp_path / "p.json"
    assert run_footprint("predict", "--train", str(data), "--out", str(out)).returncode == 0
    trained = json.loads(out.read_text())
    assert trained["version"] == 3
    assert trained["machine"] == {"cpu_model": "AMD EPYC", "isa": ["avx2", "fma"], "cores": 2,
                                  "threads": 1, "blas": {"library": rows[0]["blas"],
                                                         "kernel": "Zen", "threads": 1}}
    # Without the machine's columns (a dataset measured before they were recorded): no CPU
    # recorded, and said so.
    for r in rows:
        for column in ("cpu_model", "isa", "cores", "blas_kernel", "blas_threads"):
            r.pop(column)
    write_rows(data, rows)
    shipped = tmp_path / "shipped.json"
    assert run_footprint("predict", "--train", str(data), "--out", str(shipped)).returncode == 0
    assert "cpu_model" not in json.loads(shipped.read_text())["machine"]
    proc = run_footprint("predict", str(export(tmp_path, "mobilenet_v3_small", 64)), "--batch",
                         "1", "--predictor", str(shipped))
    assert machine_warnings(proc) == [
        "footprint predict: warning: the predictor was fitted on an unrecorded machine: its "
        "latency band is widened to a factor 5.3 either side; measure this machine's rates "
        "with footprint predict --calibrate (a few minutes)"]


def test_a_database_of_evaluations_trains_what_its_csv_trains(tmp_path):
    # scripts/predict-dataset measures through footprint evaluate into WORK/measurements.db,
    # its manifests naming each model's ONNX graph and family: --train DB must read the same
    # rows as --train of the CSV written from the same runs.
    import os
    import subprocess

    from fp_python import PYTHON, child_env

    if not os.environ.get("FOOTPRINT_BIN"):
        pytest.skip("needs the built footprint (FOOTPRINT_BIN) beside its Python package")
    build = os.path.dirname(os.path.abspath(os.environ["FOOTPRINT_BIN"]))
    models = ("squeezenet1_1,squeezenet1_0,mobilenet_v3_small,shufflenet_v2_x0_5,mnasnet0_5,"
              "resnet18")
    proc = subprocess.run([PYTHON, str(REPO / "scripts" / "predict-dataset"), "--build", build,
                           "--work", str(tmp_path), "--out", str(tmp_path / "data.csv"),
                           "--resolutions", "64", "--batches", "1,2", "--models", models],
                          env=child_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    db = tmp_path / "measurements.db"
    for source, out in ((db, tmp_path / "from-db.json"), (tmp_path / "data.csv",
                                                          tmp_path / "from-csv.json")):
        proc = run_footprint("predict", "--train", str(source), "--out", str(out))
        assert proc.returncode == 0, proc.stderr
    from_db, from_csv = (json.loads((tmp_path / f).read_text())
                         for f in ("from-db.json", "from-csv.json"))
    assert from_db["training_set"]["rows"] == 12
    assert from_db["training_set"]["families"] == from_csv["training_set"]["families"]
    assert from_db["latency"] == from_csv["latency"]
    # The machine the agent recorded with every run, from either source: its CPU and OpenBLAS.
    assert from_db["machine"] == from_csv["machine"]
    assert from_db["machine"]["cpu_model"] and from_db["machine"]["threads"] == 1
    assert from_db["peak_memory"] == from_csv["peak_memory"]
    # A graph changed since its run: that run is left out, and said so.
    graph = tmp_path / "resnet18-64.onnx"
    graph.write_bytes(graph.read_bytes() + b"\0")
    report = json.loads(run_footprint("predict", "--evaluate", str(db), "--json").stdout)
    assert report["rows"]["train"] == 10
    assert sorted(report["left_out"]) == [
        f"resnet18-64-multi-b{b}: model.graph {graph} changed since the run" for b in (1, 2)]


def test_a_model_unlike_the_training_rows_is_novel_and_its_band_wider(tmp_path):
    # A predictor fitted on CNNs only: a CNN of its rows (ResNet-18 at 128²) is near them, a
    # 2-layer LSTM (its work in recurrent matrix products) far from every row.
    cnns = ("ResNet", "VGG", "DenseNet", "MobileNet", "EfficientNet", "SqueezeNet")
    rows = [r for r in csv.DictReader(open(DATASET)) if r["family"] in cnns]
    data = write_rows(tmp_path / "cnns.csv", rows)
    fitted = tmp_path / "cnns.json"
    assert run_footprint("predict", "--train", str(data), "--out", str(fitted)).returncode == 0
    trained = json.loads(fitted.read_text())
    assert len(trained["novelty"]["rows"]) == len(rows)
    assert 0 <= trained["novelty"]["widening"] <= 20
    trained["novelty"]["widening"] = 1.0  # so that the test does not hang on what was fitted
    # Fitted here: the dataset's machine need not be this one (another VM of the same CPU
    # model runs OpenBLAS's Haswell kernels where the dataset's ran Cooperlake), and a
    # predictor of another machine has the wider band of one.
    resnet = export(tmp_path, "resnet18", 128)
    trained["machine"] = this_machine(resnet)
    fitted.write_text(json.dumps(trained))
    lstm = tmp_path / "lstm.onnx"
    from footprint.calibrate import recurrent_classifier

    torch.onnx.export(recurrent_classifier(torch), torch.randn(1, 64, 256), str(lstm),
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=13)
    near = predict(resnet, "--batch", "1", "--predictor", fitted)
    far = predict(lstm, "--batch", "1", "--predictor", fitted)
    assert near["novelty"]["value"] < 0.1 < 0.3 < far["novelty"]["value"] <= 1
    p80 = trained["latency"]["held_out_families"]["p80_relative_error"]
    for p in (near, far):
        factor = (1 + p80) * (1 + p["novelty"]["value"])
        assert p["novelty"]["band_factor"] == pytest.approx(1 + p["novelty"]["value"])
        assert p["latency_s"]["high"] == pytest.approx(p["latency_s"]["value"] * factor)
        assert p["latency_s"]["low"] == pytest.approx(p["latency_s"]["value"] / factor)
    text = run_footprint("predict", str(lstm), "--batch", "1", "--predictor", str(fitted))
    assert text.returncode == 0, text.stderr
    [line] = [x for x in text.stdout.splitlines() if x.startswith("footprint predict: latency")]
    assert f"for a novelty of {far['novelty']['value']:.2f}" in line, line
    # A predictor trained before novelty: none reported, the band as it was.
    del trained["novelty"]
    fitted.write_text(json.dumps(trained))
    old = predict(lstm, "--batch", "1", "--predictor", fitted)
    assert old["novelty"] is None
    assert old["latency_s"]["high"] == pytest.approx(old["latency_s"]["value"] * (1 + p80))
