"""footprint predict's cost formulas for the operators of transformers and recurrent nets, each
against FLOPs counted by hand on a graph of one operator (or against the same model exported in
its decomposed form, or against PyTorch's own parameter shapes): Einsum, LSTM, GRU, RNN,
LayerNormalization, Gelu, Softmax, Resize, Pad and Gather."""

from __future__ import annotations

import json

import pytest

from fp_python import run_footprint

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

np = pytest.importorskip("numpy")


def features(path, *args):
    proc = run_footprint("predict", "--features", "--json", str(path), *map(str, args))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def save(tmp_path, name, nodes, inputs, outputs, initializers=(), opset=13, domains=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=imports).SerializeToString())
    return path


def value(name, dims, kind=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, kind, dims)


def weights(name, dims):
    return numpy_helper.from_array(np.zeros(dims, dtype=np.float32), name)


def single(tmp_path, op, input_dims, output, attributes=None, initializers=(), **kwargs):
    """A graph of one `op` over float inputs x0, x1, ... (then the initializers), and `f` its
    features."""
    names = [f"x{i}" for i in range(len(input_dims))]
    node = helper.make_node(op, names + [i.name for i in initializers], ["y"],
                            **(attributes or {}), domain=kwargs.pop("domain", ""))
    path = save(tmp_path, op.lower(), [node], [value(n, d) for n, d in zip(names, input_dims)],
                [output], initializers, **kwargs)
    return features(path)


@pytest.mark.parametrize("equation", ["bij,bjk->bik", "B I J, B J K -> B I K", "...ij,...jk"])
def test_einsum_contracts_as_a_matrix_product(tmp_path, equation):
    # 2 x (3x4 @ 4x5): 2*3*4*5 = 120 MACs; PyTorch exports MaxViT's attention with spaces and
    # capitals ("B G H I D, B G H J D -> B G H I J"), which ONNX 1.12 gives a rank, no shape.
    a, b = value("a", [2, 3, 4]), value("b", [2, 4, 5])
    path = save(tmp_path, "einsum", [helper.make_node("Einsum", ["a", "b"], ["e"],
                                                      equation=equation),
                                     helper.make_node("Relu", ["e"], ["y"])],
                [a, b], [value("y", None)])
    f = features(path)
    assert f["macs"] == 120 and f["unknown_operators"] == {} and f["assumptions"] == []
    # Its output's shape is known, so the Relu after it counts its 2*3*5 elements.
    assert f["flops"] == 2 * 120 + 30
    assert f["features"]["flops.gemm"] == 240


def test_an_einsum_without_a_sum_is_its_products(tmp_path):
    f = single(tmp_path, "Einsum", [[3, 4], [3, 4]], value("y", None),
               {"equation": "ij,ij->ij"})
    assert f["macs"] == 0 and f["flops"] == 12


def recurrent(tmp_path, op, hidden, directions=1, seq=5, batch=2, size=16, bias=True):
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    init = [weights("W", [directions, gates * hidden, size]),
            weights("R", [directions, gates * hidden, hidden])]
    if bias:
        init.append(weights("B", [directions, 2 * gates * hidden]))
    direction = "bidirectional" if directions == 2 else "forward"
    return single(tmp_path, op, [[seq, batch, size]], value("y", None),
                  {"hidden_size": hidden, "direction": direction}, init)


@pytest.mark.parametrize("op, directions, bias, macs, flops", [
    # seq 5 x batch 2 = 10 steps, input 16, hidden 8: gates x 8 x (16 + 8) MACs a step; the
    # cell per step and hidden unit: LSTM 4 sums + 9 (3 sigmoids, 2 tanh, c = f*c + i*g, o*),
    # GRU 3 sums + 8, RNN 1 + 1; the biases 2 per gate.
    ("LSTM", 1, True, 10 * 4 * 8 * 24, 2 * 7680 + 10 * 8 * (13 + 8)),
    ("LSTM", 2, True, 2 * 7680, 2 * (2 * 7680 + 10 * 8 * (13 + 8))),
    ("LSTM", 1, False, 7680, 2 * 7680 + 10 * 8 * 13),
    ("GRU", 1, True, 10 * 3 * 8 * 24, 2 * 5760 + 10 * 8 * (11 + 6)),
    ("RNN", 1, True, 10 * 1 * 8 * 24, 2 * 1920 + 10 * 8 * (2 + 2)),
])
def test_recurrent_cells(tmp_path, op, directions, bias, macs, flops):
    f = recurrent(tmp_path, op, 8, directions=directions, bias=bias)
    assert f["unknown_operators"] == {}
    assert (f["macs"], f["flops"]) == (macs, flops)
    assert f["features"]["flops.gemm"] == flops  # a recurrent cell's work is matrix products


def test_a_pytorch_lstm_counts_what_its_weights_multiply(tmp_path):
    torch = pytest.importorskip("torch")
    lstm = torch.nn.LSTM(16, 32, num_layers=2).eval()
    path = tmp_path / "lstm.onnx"
    torch.onnx.export(lstm, torch.randn(5, 3, 16), str(path), opset_version=13)
    # Every step of every sample multiplies each weight once (layer by layer, W x and R h).
    macs = 5 * 3 * sum(p.numel() for n, p in lstm.named_parameters() if n.startswith("weight"))
    f = features(path)
    assert f["unknown_operators"] == {} and f["macs"] == macs
    # Each layer's recurrent weights are read at every one of the 5 steps, whatever the batch
    # (3 samples): what the roofline's weights term streams from memory.
    recurrent = sum(p.numel() * 4 for n, p in lstm.named_parameters() if n.startswith("weight_hh"))
    assert f["features"]["recurrent_weight_bytes"] == 5 * recurrent


@pytest.mark.parametrize("directions", [1, 2])
def test_a_recurrent_cell_reads_its_recurrent_weights_at_every_step(tmp_path, directions):
    # seq 5, LSTM of 8 hidden: R is directions x 32 x 8 float32, read at each of the 5 steps
    # of each direction; the batch (2) reads it once a step.
    f = recurrent(tmp_path, "LSTM", 8, directions=directions)
    assert f["features"]["recurrent_weight_bytes"] == 5 * directions * 32 * 8 * 4
    assert single(tmp_path, "Relu", [[2, 3]], value("y", None))["features"][
        "recurrent_weight_bytes"] == 0


def test_fused_operators_count_what_their_decomposition_counts(tmp_path):
    torch = pytest.importorskip("torch")
    # A LayerNorm exported at opset 13 is ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul,
    # Add; at opset 17 one LayerNormalization: 7 per element and 2 per row in both.
    norm = torch.nn.LayerNorm(16).eval()
    counted = {}
    for opset in (13, 17):
        path = tmp_path / f"norm{opset}.onnx"
        torch.onnx.export(norm, torch.randn(2, 8, 16), str(path), opset_version=opset)
        counted[opset] = features(path)
    assert "LayerNormalization" in counted[17]["op_counts"]
    assert "LayerNormalization" not in counted[13]["op_counts"]
    assert counted[13]["flops"] == counted[17]["flops"] == 7 * 256 + 2 * 16
    # GELU at opset 13 is Div, Erf, Add, Mul, Mul; com.microsoft's Gelu (ONNX Runtime's fused
    # graphs, whose outputs ONNX's inference leaves without a shape) counts the same 5.
    path = tmp_path / "gelu13.onnx"
    torch.onnx.export(torch.nn.GELU().eval(), torch.randn(4, 10), str(path), opset_version=13)
    assert features(path)["flops"] == 5 * 40
    fused = single(tmp_path, "Gelu", [[4, 10]], value("y", None), domain="com.microsoft",
                   domains=["com.microsoft"])
    assert fused["flops"] == 5 * 40 and fused["unknown_operators"] == {}


def test_softmax_resize_pad_gather(tmp_path):
    # Softmax: a max, a subtraction, an exponent, a sum and a division per element.
    assert single(tmp_path, "Softmax", [[2, 10]], value("y", [2, 10]))["flops"] == 100
    # Resize 4x4 -> 8x8: linear weighs 2 x 2 neighbours (4 multiplies, 3 adds) per output;
    # nearest copies.
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales")
    roi = numpy_helper.from_array(np.array([], dtype=np.float32), "roi")
    for mode, flops in (("linear", 64 * 7), ("nearest", 0), ("cubic", 64 * 31)):
        node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode=mode)
        path = save(tmp_path, "resize", [node], [value("x", [1, 1, 4, 4])],
                    [value("y", None)], [roi, scales])
        f = features(path)
        assert f["flops"] == flops and f["unknown_operators"] == {}, mode
    # Pad moves bytes: 0 FLOPs, its input, its pads and its output read and written.
    pads = numpy_helper.from_array(np.array([0, 1, 0, 1], dtype=np.int64), "pads")
    f = single(tmp_path, "Pad", [[3, 4]], value("y", None), initializers=[pads])
    assert f["flops"] == 0 and f["features"]["bytes.movement"] == 48 + 32 + 3 * 6 * 4
    # Gather reads the rows it gathers, not the whole table: 10 indices of 8 bytes, 10 rows of
    # 64 floats read and written, not the table's 1000 x 64 x 4 bytes.
    table = weights("table", [1000, 64])
    node = helper.make_node("Gather", ["table", "ids"], ["y"])
    path = save(tmp_path, "gather", [node], [value("ids", [2, 5], TensorProto.INT64)],
                [value("y", None)], [table])
    f = features(path)
    assert f["features"]["bytes.movement"] == 10 * 8 + 2 * 10 * 64 * 4
    assert f["param_bytes"] == 1000 * 64 * 4  # the table is still the model's weights
