#!/usr/bin/python3
"""Writes the seeds of the ONNX fuzz target (tests/unit/fuzz_onnx_test.cc) into
tests/fuzz/corpus/onnx/: small models (a few KB) that reach each part of footprint's ONNX
reader and libonnx's shape inference: convolutions and pooling with every attribute their
inference divides by, a matrix product, a shape computation that shape_folding.cc evaluates,
constant inputs read as sizes, a subgraph, and an Einsum (whose output's dimensions
footprint reads from its equation) feeding a recurrent cell. Every input's first dimension is the dynamic
"batch" (footprint predict --batch N).

Run with Debian's python3-onnx: /usr/bin/python3 tests/fuzz/make_onnx_seeds.py
"""

from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parent / "corpus" / "onnx"


def value(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def weights(name, *shape):
    return numpy_helper.from_array(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 7,
                                   name)


def integers(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def save(name, nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="footprint-fuzz-seeds")
    (OUT / f"{name}.onnx").write_bytes(model.SerializeToString())


def conv_pool():
    save("conv_pool", [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", strides=[2, 2],
                         pads=[1, 1, 1, 1], dilations=[1, 1], group=1, kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["m"], name="maxpool", kernel_shape=[2, 2],
                         strides=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("AveragePool", ["m"], ["y"], name="avgpool", kernel_shape=[2, 2],
                         strides=[1, 1], ceil_mode=1),
    ], [value("x", ["batch", 3, 16, 16])], [value("y", ["batch", 4, 3, 3])], [weights("w", 4, 3, 3, 3),
                                                                 weights("b", 4)])


def matmul_softmax():
    save("matmul_softmax", [
        helper.make_node("MatMul", ["x", "w"], ["p"], name="matmul"),
        helper.make_node("Add", ["p", "b"], ["a"], name="bias"),
        helper.make_node("Softmax", ["a"], ["s"], name="softmax", axis=-1),
        helper.make_node("Gemm", ["s", "w2"], ["y"], name="gemm", transB=1),
    ], [value("x", ["batch", 8])], [value("y", ["batch", 3])], [weights("w", 8, 4), weights("b", 4),
                                                     weights("w2", 3, 4)])


def shape_chain():
    # PyTorch's channel shuffle: the shape computed from the input's, then Reshape.
    save("shape_chain", [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Gather", ["s", "one"], ["c"], axis=0),
        helper.make_node("Div", ["c", "two"], ["half"]),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Unsqueeze", ["half", "axes"], ["h1"]),
        helper.make_node("Concat", ["n1", "h1", "minus_one"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1]),
    ], [value("x", ["batch", 6, 4])], [value("y", ["batch", 8, 3])],
        [integers("zero", 0), integers("one", 1), integers("two", 2), integers("axes", [0]),
         integers("minus_one", [-1])])


def sizes_inputs():
    # Constant inputs that inference reads as sizes and scales.
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales")
    save("sizes_inputs", [
        helper.make_node("ConvTranspose", ["x", "w"], ["t"], name="deconv", strides=[2, 2],
                         output_padding=[1, 1], group=2),
        helper.make_node("DepthToSpace", ["t"], ["d"], name="d2s", blocksize=2),
        helper.make_node("Resize", ["d", "", "scales"], ["z"], name="resize", mode="nearest"),
        helper.make_node("Split", ["z", "split"], ["s0", "s1"], name="split", axis=2),
        helper.make_node("Tile", ["s0", "repeats"], ["y"], name="tile"),
    ], [value("x", ["batch", 4, 4, 4])],
        [value("y", ["batch", 2, 20, 40]), value("s1", ["batch", 2, 30, 40])],
        [weights("w", 4, 4, 3, 3), scales, integers("split", [10, 30]),
         integers("repeats", [1, 1, 2, 1])])


def subgraph():
    then_graph = helper.make_graph([helper.make_node("AveragePool", ["x"], ["p"],
                                                     kernel_shape=[2, 2], strides=[2, 2])],
                                   "then", [], [value("p", ["batch", 2, 4, 4])])
    else_graph = helper.make_graph([helper.make_node("MaxPool", ["x"], ["q"],
                                                     kernel_shape=[2, 2], strides=[2, 2])],
                                   "else", [], [value("q", ["batch", 2, 4, 4])])
    save("subgraph", [
        helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_graph,
                         else_branch=else_graph),
    ], [value("cond", [], TensorProto.BOOL), value("x", ["batch", 2, 8, 8])],
        [value("y", ["batch", 2, 4, 4])])


def einsum_lstm():
    save("einsum_lstm", [
        helper.make_node("Einsum", ["x", "w"], ["e"], name="einsum",
                         equation="B S I, I H -> S B H"),
        helper.make_node("LSTM", ["e", "W", "R", "B"], ["y"], name="lstm", hidden_size=4),
    ], [value("x", ["batch", 5, 6])], [value("y", [5, 1, "batch", 4])],
        [weights("w", 6, 3), weights("W", 1, 16, 3), weights("R", 1, 16, 4), weights("B", 1, 32)])


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for make in (conv_pool, matmul_softmax, shape_chain, sizes_inputs, subgraph, einsum_lstm):
        make()
