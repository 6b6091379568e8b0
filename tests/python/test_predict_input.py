"""footprint predict on input it must refuse (issue 37): ONNX attributes and data that libonnx's
shape inference divides by or sizes with, checked before it sees them (each of these models
killed footprint with SIGFPE or SIGSEGV before); a model that is not a regular file; --batch and
--margin out of their range. Each is one line and exit status 2, never a signal. Only onnx is
needed (not torch): the models are made here, a node or two each."""

from __future__ import annotations

import os
import subprocess

import pytest

from fp_python import footprint_command, run_footprint

onnx = pytest.importorskip("onnx")  # Debian's python3-onnx, with numpy
import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def write_model(path, nodes, initializers=(), x_shape=("batch", 3, 8, 8), outputs=("y",)):
    graph = helper.make_graph(
        nodes, "refusals", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in outputs],
        initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path.write_bytes(model.SerializeToString())
    return path


def conv_weights(*shape):
    return numpy_helper.from_array(np.ones(shape, dtype=np.float32), "w")


def refused(proc):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)  # a signal is negative
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("footprint: "), proc.stderr
    return lines[0]


@pytest.mark.parametrize("op", ["Conv", "MaxPool", "AveragePool"])
def test_zero_strides_are_refused_naming_the_node(tmp_path, op):
    # Issue 37, row 3: libonnx's shape inference divided by the strides (SIGFPE).
    inputs, attributes = (["x", "w"], {}) if op == "Conv" else (["x"], {"kernel_shape": [2, 2]})
    model = write_model(tmp_path / "m.onnx",
                        [helper.make_node(op, inputs, ["y"], name="layer1", strides=[0, 0],
                                          **attributes)],
                        [conv_weights(4, 3, 3, 3)] if op == "Conv" else [])
    line = refused(run_footprint("predict", str(model), "--batch", "1"))
    assert f"node 'layer1' ({op}): attribute strides holds 0, allowed are 1 to 2147483648" in line


def raw_int64(name, values, cut):
    tensor = numpy_helper.from_array(np.array(values, dtype=np.int64), name)
    tensor.raw_data = tensor.raw_data[:len(tensor.raw_data) - cut]
    return tensor


# Each crashed libonnx's shape inference before it was checked: a remainder by zero outputs, a
# block that squares to 0, weights indexing past the input's dimensions, raw data copied past
# the end of its buffer, a split that is a divisor of 0.
@pytest.mark.parametrize("nodes, initializers, said", [
    ([helper.make_node("Split", ["x"], [], name="s", axis=1)], [],
     "node 's' (Split) has 0 outputs, ONNX's Split takes at least 1"),
    ([helper.make_node("DepthToSpace", ["x"], ["y"], name="d", blocksize=2**32)], [],
     "node 'd' (DepthToSpace): attribute blocksize holds 4294967296"),
    ([helper.make_node("Conv", ["x", "w"], ["y"], name="c")], [conv_weights(4, 3, 3, 3, 3, 3)],
     "Conv node's input has rank 4 and its weights rank 6"),
    ([helper.make_node("Reshape", ["x", "shape"], ["y"])], [raw_int64("shape", [1, -1], 1)],
     "initializer 'shape' holds 15 bytes of data where its dimensions and type need 16"),
    ([helper.make_node("SplitToSequence", ["x", "split"], ["y"], axis=1)],
     [numpy_helper.from_array(np.array(0, dtype=np.int64), "split")],
     "SplitToSequence node's input split holds 0, allowed are 1 to"),
])
def test_what_libonnx_cannot_take_is_refused_before_it_sees_it(tmp_path, nodes, initializers,
                                                                said):
    model = write_model(tmp_path / "m.onnx", nodes, initializers)
    assert said in refused(run_footprint("predict", str(model), "--batch", "1"))


def test_a_model_that_is_not_a_regular_file_is_refused(tmp_path):
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)  # no writer: opening it for reading would block for ever
    for path, kind in ((fifo, "is a FIFO"), ("/dev/zero", "is a device"), (tmp_path, "a folder")):
        proc = subprocess.run(footprint_command() + ["predict", str(path), "--batch", "1"],
                              capture_output=True, text=True, timeout=60)
        assert kind in refused(proc)


@pytest.fixture
def small_model(tmp_path):
    return write_model(tmp_path / "small.onnx",
                       [helper.make_node("Conv", ["x", "w"], ["y"], name="c")],
                       [conv_weights(4, 3, 3, 3)])


# Issue 37, row 15: --batch beyond int64 was clamped without a word; nan, inf and negative
# margins were accepted.
@pytest.mark.parametrize("option, value", [
    ("--batch", "99999999999999999999"), ("--batch", "0"), ("--batch", "-3"),
    ("--batch", "1048577"), ("--batch", "0x10"), ("--batch", "2.5"),
    ("--margin", "nan"), ("--margin", "inf"), ("--margin", "-5"), ("--margin", "-0.1"),
    ("--margin", "10.5"),
])
def test_batch_and_margin_outside_their_range_are_one_line(small_model, option, value):
    args = ["predict", str(small_model), "--features", f"{option}={value}"]
    line = refused(run_footprint(*args, *(["--batch", "1"] if option == "--margin" else [])))
    assert f"{option} '{value}'" in line
    assert "from 1 to 1048576" in line if option == "--batch" else "from 0 to 10" in line


def test_the_ends_of_the_ranges_are_accepted(small_model):
    proc = run_footprint("predict", str(small_model), "--features", "--json", "--batch",
                         "1048576", "--margin", "10")
    assert proc.returncode == 0, proc.stderr
    assert '"batch":1048576' in proc.stdout
