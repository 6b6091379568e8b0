"""footprint predict --calibrate: a predictor fitted on another machine (here: OpenBLAS on its
slow SSE3 kernels, OPENBLAS_CORETYPE=Prescott) predicts within the calibration's stated band
once this machine's rates are measured, and warns before; a calibration interrupted stores
nothing; without PyTorch, one line."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from fp_python import REPO, child_env, footprint_command

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
pytest.importorskip("onnx")

PRESCOTT = {"OPENBLAS_CORETYPE": "Prescott"}

# The models (torchvision's, weights=None, and a 2-layer LSTM over 64 steps: the recurrent
# family) as bench/predict_bench.py builds them: build() gives a model and its input's shape
# after the batch.
sys.path.insert(0, str(REPO / "bench"))
from predict_bench import BUILD  # noqa: E402

MODELS: dict = {}
exec(BUILD, MODELS)

# The ground truth: the model run by PyTorch on one thread with OpenBLAS pinned to it, as the
# agent runs it, timed as the calibration times its references: the fastest of 15 repetitions
# by the thread's CPU time (the kernel's account of the time the model held a core). On shared
# cores the wall clock also counts other processes' slices: beside two busy loops no
# repetition of a 50-ms LSTM was undisturbed, and a calibration timed at a busier moment put
# the low end of its band at 89.3 ms, above the 76.7 ms measured.
TIME_MODEL = BUILD + """
import time
from footprint.agent import _openblas
torch.set_num_threads(1)
for blas in _openblas():
    blas.openblas_set_num_threads(1)
model, shape = build(sys.argv[1], int(sys.argv[2]))
x = torch.randn(int(sys.argv[3]), *shape)
with torch.inference_mode():
    model(x)
    times = []
    for _ in range(15):
        start = time.thread_time()
        for _ in range(3):
            model(x)
        times.append((time.thread_time() - start) / 3)
print(min(times))
"""


def footprint(*args, env=None, **kw):
    return subprocess.run(footprint_command() + list(map(str, args)), env=env or child_env(),
                          capture_output=True, text=True, timeout=300, **kw)


def export(tmp_path, name, resolution):
    path = tmp_path / f"{name}-{resolution}.onnx"
    model, shape = MODELS["build"](name, resolution)
    torch.onnx.export(model, torch.randn(1, *shape), str(path),
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=13)
    return path


def timed(name, resolution, batch, env):
    """The model's latency measured by PyTorch (TIME_MODEL)."""
    return float(subprocess.run(
        ["/usr/bin/python3", "-c", TIME_MODEL, name, str(resolution), str(batch)], env=env,
        check=True, capture_output=True, text=True, timeout=300).stdout)


def this_machine_predictor(tmp_path, model):
    """The shipped CPU predictor recording this machine as it is without OPENBLAS_CORETYPE."""
    here = json.loads(footprint("predict", "--json", model, "--batch", 1,
                                "-o", tmp_path / "none.db").stdout)["machine"]["here"]
    trained = json.loads((REPO / "data" / "predict" / "cpu-predictor.json").read_text())
    trained.update(version=3, machine={**here, "threads": 1})
    path = tmp_path / "here.json"
    path.write_text(json.dumps(trained))
    return path


def calibration_runs(db):
    if not db.exists():
        return []
    with sqlite3.connect(db) as c:
        return c.execute("SELECT id FROM runs WHERE name = 'predict-calibration'").fetchall()


def test_after_calibrating_another_blas_kernel_predicts_within_the_stated_band(tmp_path):
    model = export(tmp_path, "resnet34", 64)  # not one of the references
    predictor = this_machine_predictor(tmp_path, model)
    db = tmp_path / "fp.db"
    env = child_env(**PRESCOTT)
    ask = ["predict", "--json", model, "--batch", 1, "--predictor", predictor, "-o", db]
    before = footprint(*ask, env=env)
    assert before.returncode == 0, before.stderr
    if "fitted on another machine" not in before.stderr:
        pytest.skip("OpenBLAS runs the same kernel whatever OPENBLAS_CORETYPE says")
    assert "footprint predict --calibrate" in before.stderr
    assert json.loads(before.stdout)["calibrated"] is None
    # The truth, timed before the calibration and again after it: the faster of the two (other
    # work on shared cores can slow every repetition of one window).
    lstm = export(tmp_path, "lstm", 64)  # a recurrent net, none of the references' kind
    truths = [("resnet34", 1), ("lstm", 1), ("lstm", 8)]
    first = {(name, batch): timed(name, 64, batch, env) for name, batch in truths}

    cal = footprint("predict", "--calibrate", "--quick", "--json", "-o", db, env=env)
    assert cal.returncode == 0, cal.stderr
    calibration = json.loads(cal.stdout)
    assert [(calibration["calibrated"],)] == calibration_runs(db)
    band = calibration["band"]
    # The band is the calibration's worst reference error, 35 % at least. (Not a bound on it:
    # beside busy loops a reference timed at a busy moment missed its rates by 151 %, and the
    # answers below then say so.)
    assert len(calibration["errors"]) == 3
    assert band == pytest.approx(max([0.35] + [abs(e["relative_error"])
                                               for e in calibration["errors"]]))

    after = footprint(*ask, env=env)
    assert after.returncode == 0, after.stderr
    assert "fitted on another machine" not in after.stderr  # this machine is calibrated
    p = json.loads(after.stdout)
    assert p["calibrated"] == calibration["calibrated"]
    latency = p["latency_s"]
    assert latency["high"] == pytest.approx(latency["value"] * (1 + band))
    measured = {k: min(first[k], timed(k[0], 64, k[1], env)) for k in truths}
    # Within the band the calibration states, unless the calibration says its own references
    # disagree with its rates (timed while other work held the cores: then every answer says
    # so, and a band is not claimed).
    if disowned(p, after.stderr):
        return

    def fastest(key, high):
        # Other work on shared cores only ever slows a window down: a truth above the band is
        # timed again (twice at most) and the fastest window kept.
        for _ in range(2):
            if measured[key] <= high:
                break
            measured[key] = min(measured[key], timed(key[0], 64, key[1], env))
        return measured[key]

    assert latency["low"] <= fastest(("resnet34", 1), latency["high"]) <= latency["high"], \
        (measured, latency)
    # The uncalibrated prediction was on the wrong side of it by far: Prescott's kernels.
    assert json.loads(before.stdout)["latency_s"]["value"] < latency["low"]

    # The LSTM, whose steps run one after the other, at batch 1 and 8 alike (costed as one
    # product, it was predicted at a quarter of its time).
    for batch in (1, 8):
        p = json.loads(footprint("predict", "--json", lstm, "--batch", batch,
                                 "--predictor", predictor, "-o", db, env=env).stdout)
        truth = fastest(("lstm", batch), p["latency_s"]["high"])
        assert p["latency_s"]["low"] <= truth <= p["latency_s"]["high"], (batch, truth, p)

    # Without the kernel that was calibrated, the calibration is not this machine's.
    plain = footprint(*ask)
    assert json.loads(plain.stdout)["calibrated"] is None


def disowned(answer, stderr):
    """Whether a calibrated answer says the calibration's own references disagree with its
    rates, and warns about it."""
    if not any(" was off by " in gap for gap in answer["calibration_gaps"] or []):
        return False
    assert "the calibration does not cover this prediction: " in stderr, stderr
    return True


# A calibrate.py that measures nothing: it writes the record the test gives it (FAKE_RECORD), so
# that every rate is known and the prediction can be computed by hand.
FAKE_CALIBRATE = """
import json, os, shutil, sys
shutil.copy(os.environ["FAKE_RECORD"], sys.argv[1])
"""


def fake_calibration(tmp_path, rates, references, here):
    """`footprint predict --calibrate` with FAKE_CALIBRATE: `rates` and `references` stored as
    this machine's (`here`: footprint's record of it) calibration in tmp_path/fp.db."""
    package = tmp_path / "fake" / "footprint"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "calibrate.py").write_text(FAKE_CALIBRATE)
    blas = here.get("blas") or {}
    record = {"version": 3, "threads": 1, "wall_s": 1.0, "cpu_s": 1.0, "rates": rates,
              "references": references,
              "machine": {"device_name": here["cpu_model"], "isa": here["isa"],
                          "cores": here["cores"], "threads": 1,
                          "blas_library": blas.get("library"), "blas_kernel": blas.get("kernel"),
                          "blas_threads": 1}}
    (tmp_path / "record.json").write_text(json.dumps(record))
    env = child_env(FAKE_RECORD=str(tmp_path / "record.json"))
    env["PYTHONPATH"] = os.pathsep.join([str(package.parent), env["PYTHONPATH"]])
    # Run from a folder holding another footprint package, as a checkout or a build's python/
    # does: `python -m` would take the current folder's first, and this one measures nothing.
    decoy = tmp_path / "decoy" / "footprint"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("")
    (decoy / "calibrate.py").write_text("raise SystemExit('the current folder was imported')\n")
    db = tmp_path / "fp.db"
    cal = footprint("predict", "--calibrate", "--json", "-o", db, env=env, cwd=decoy.parent)
    assert cal.returncode == 0, cal.stderr
    return db


def fake_rates(four_mib_rate):
    """Rates at which everything is free but weights: 100 GB/s up to 1 MiB (the caches),
    `four_mib_rate` at 4 MiB and beyond."""
    fast = 1e18

    def curve(x, rate):
        return [{x: 1, rate: fast}]

    return {
        "conv": curve("m", "flops_per_s"), "conv_small": curve("m", "flops_per_s"),
        "conv_1x1": curve("m", "flops_per_s"), "conv_1x1_onednn": curve("m", "flops_per_s"),
        "gemm": [{"m": 1, "weight_bytes": 1, "flops_per_s": fast}],
        "elementwise": curve("bytes", "bytes_per_s"), "batchnorm": curve("bytes", "bytes_per_s"),
        "weights": [{"bytes": 1 << 20, "bytes_per_s": 100e9},
                    {"bytes": 4 << 20, "bytes_per_s": four_mib_rate}],
        "conv_weight_stream_bytes_per_s": fast, "dwconv_bytes_per_s": fast,
        "attention": curve("macs", "flops_per_s"), "softmax_flops_per_s": fast,
        "layernorm_flops_per_s": fast, "maxpool_flops_per_s": fast, "avgpool_flops_per_s": fast,
        "operator_overhead_s": 1e-15, "blas_after_openmp_s": 0}


def test_a_recurrent_step_reads_its_weights_at_the_calibrated_rate_of_their_size(tmp_path):
    """The LSTM's steps cost what the calibration's matrix-vector products over weights of
    their size say (a 512-unit cell reads 2048 x 512 floats, 4 MiB, at every step), every
    other rate set too fast to count."""
    lstm = export(tmp_path, "lstm", 64)
    here = json.loads(footprint("predict", "--json", lstm, "--batch", 1,
                                "-o", tmp_path / "none.db").stdout)["machine"]["here"]
    # References measured at almost nothing: the overhead per call is fitted at its floor.
    references = [{"model": name, "onnx": str(lstm), "batch": 1, "latency_s": 1e-9}
                  for name in ("a", "b")]
    steps = 2 * 64  # two layers of 64 steps
    for rate in (1e9, 4e9):
        db = fake_calibration(tmp_path / str(rate), fake_rates(rate), references, here)
        for batch in (1, 8):  # at batch 8 the FLOPs are still free: the weights decide
            p = json.loads(footprint("predict", "--json", lstm, "--batch", batch,
                                     "-o", db).stdout)
            assert p["calibrated"] is not None
            # (The classifier's 20 KB of weights, at 100 GB/s, add 0.2 us.)
            assert p["latency_s"]["value"] == pytest.approx(steps * (4 << 20) / rate, rel=1e-5)


def test_a_calibrated_prediction_says_where_the_references_do_not_cover_it(tmp_path):
    """On every call, a warning and "calibration_gaps": a batch beyond the references', and
    references the calibration's rates do not explain (here timed at 1 ns)."""
    lstm = export(tmp_path, "lstm", 64)
    here = json.loads(footprint("predict", "--json", lstm, "--batch", 1,
                                "-o", tmp_path / "none.db").stdout)["machine"]["here"]
    references = [{"model": name, "onnx": str(lstm), "batch": 1, "latency_s": 1e-9}
                  for name in ("a", "b")]
    db = fake_calibration(tmp_path, fake_rates(1e9), references, here)
    for batch in (1, 8):
        run = footprint("predict", "--json", lstm, "--batch", batch, "-o", db)
        gaps = json.loads(run.stdout)["calibration_gaps"]
        assert any("own reference a at batch 1 was off by" in g for g in gaps), gaps
        assert any("batch 8 is outside" in g for g in gaps) == (batch == 8), gaps
        warned = [line for line in run.stderr.splitlines()
                  if "warning: the calibration does not cover this prediction: " in line]
        assert len(warned) == len(gaps), run.stderr
    plain = json.loads(footprint("predict", "--json", lstm, "--batch", 1,
                                 "-o", tmp_path / "none.db").stdout)
    assert plain["calibration_gaps"] is None  # not calibrated


def start_calibrating(db):
    """footprint predict --calibrate in a session of its own, once calibrate.py has begun."""
    proc = subprocess.Popen(footprint_command() + ["predict", "--calibrate", "-o", str(db)],
                            env=child_env(), stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    first = proc.stderr.readline()  # calibrate.py has started measuring
    assert first.startswith("footprint predict: calibrating:"), first
    return proc


def assert_stored_nothing(out, err, db):
    said = [line for line in err.splitlines() if not line.startswith("footprint predict: "
                                                                      "calibrating:")]
    assert said == ["footprint predict: the calibration was interrupted: nothing was stored "
                    "(footprint predict --calibrate measures again)"], err
    assert out == "" and calibration_runs(db) == []


def test_an_interrupted_calibration_stores_nothing_and_says_so_in_one_line(tmp_path):
    db = tmp_path / "fp.db"
    proc = start_calibrating(db)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole group
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert_stored_nothing(out, err, db)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_footprint_alone_stops_the_measuring_child_and_stores_nothing(tmp_path,
                                                                                  signum):
    """kill PID (a service manager, a timeout) reaches footprint and not calibrate.py: footprint
    passes it on, so the measurements stop there and then instead of running to the end."""
    db = tmp_path / "fp.db"
    proc = start_calibrating(db)
    children = (pathlib.Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
                .read_text().split())
    assert len(children) == 1  # calibrate.py
    os.kill(proc.pid, signum)  # footprint alone
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, err
    # The child stopped: it measured nothing after the signal (uninterrupted, it goes on to
    # time its reference models), and footprint waited for it before exiting.
    assert "reference models" not in err, err
    assert not pathlib.Path(f"/proc/{children[0]}").exists()
    assert_stored_nothing(out, err, db)


def test_without_torch_calibrating_is_one_line_saying_what_to_install(tmp_path):
    fake = tmp_path / "no-torch" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named torch')\n")
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(fake.parent), env["PYTHONPATH"]])
    db = tmp_path / "fp.db"
    proc = footprint("predict", "--calibrate", "-o", db, env=env)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("footprint: --calibrate: PyTorch does not load in /usr/bin/python3")
    assert "install python3-torch" in line and line.endswith("nothing was stored")
    assert calibration_runs(db) == []
