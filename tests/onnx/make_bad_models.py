#!/usr/bin/env python3
"""Writes small ONNX models for the import's tests, each built with onnx.helper to be one
kind of input: good ones (external data, a loss in the graph, dynamic dimensions) and bad
ones (opset 18, missing external data, unsupported operators, NaN and Inf weights, no
parameters, not ONNX at all). Usage: make_bad_models.py OUT_DIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

def weights(name, shape, values=None):
    """Values from a generator seeded by the name: a model built twice has the same weights."""
    rng = np.random.default_rng(sum(name.encode()))
    array = values if values is not None else rng.standard_normal(shape).astype(np.float32)
    return numpy_helper.from_array(array.astype(np.float32), name)


def matmul_model(input_dims, features=8, outputs=16, weight_values=None, opset=13, extra_nodes=(), name="mlp"):
    """input -> MatMul(w) -> Add(b) -> Relu -> output, plus extra_nodes appended after Relu."""
    nodes = [helper.make_node("MatMul", ["input", "w"], ["mm"], name="matmul"),
             helper.make_node("Add", ["mm", "b"], ["pre"], name="bias"),
             helper.make_node("Relu", ["pre"], ["act"], name="relu")]
    last = "act"
    for index, (op, attributes) in enumerate(extra_nodes):
        out = f"extra{index}"
        nodes.append(helper.make_node(op, [last], [out], name=f"{op.lower()}_node", **attributes))
        last = out
    nodes.append(helper.make_node("Identity", [last], ["output"], name="out"))
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, input_dims)],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [input_dims[0], outputs])],
        initializer=[weights("w", (features, outputs), weight_values), weights("b", (outputs,))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="make_bad_models")


def save(model, out_dir, name, check=True):
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, name))


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)

    save(matmul_model([2, 8]), out_dir, "fixed.onnx")
    save(matmul_model(["batch", "features"]), out_dir, "dynamic.onnx")
    save(matmul_model([2, 8], opset=18), out_dir, "opset18.onnx", check=False)
    save(matmul_model([2, 8], extra_nodes=[("Selu", {}), ("Softplus", {})]), out_dir, "unsupported.onnx")

    rng = np.random.default_rng(7)
    nan = rng.standard_normal((8, 16)).astype(np.float32)
    nan.flat[5] = np.nan
    save(matmul_model([2, 8], weight_values=nan), out_dir, "nan.onnx")
    inf = rng.standard_normal((8, 16)).astype(np.float32)
    inf.flat[17] = np.inf
    save(matmul_model([2, 8], weight_values=inf), out_dir, "inf.onnx")

    relu = helper.make_graph([helper.make_node("Relu", ["input"], ["output"], name="relu")], "relu",
                             [helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 8])],
                             [helper.make_tensor_value_info("output", TensorProto.FLOAT, [2, 8])])
    save(helper.make_model(relu, opset_imports=[helper.make_opsetid("", 13)]), out_dir, "no_parameters.onnx")

    # The weights in a file next to the model, as onnx.save writes models over 2 GiB.
    external = matmul_model([2, 8])
    onnx.save_model(external, os.path.join(out_dir, "external.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="external.weights", size_threshold=0)
    missing = matmul_model([2, 8])
    onnx.save_model(missing, os.path.join(out_dir, "external_missing.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="external_missing.weights", size_threshold=0)
    os.remove(os.path.join(out_dir, "external_missing.weights"))
    outside = onnx.load(os.path.join(out_dir, "external.onnx"), load_external_data=False)
    for tensor in outside.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../small/external.weights"
    onnx.save(outside, os.path.join(out_dir, "external_outside.onnx"))

    # A classifier carrying its own loss: logits and labels into SoftmaxCrossEntropyLoss.
    loss_graph = helper.make_graph(
        [helper.make_node("Gemm", ["input", "w", "b"], ["logits"], name="classifier", transB=1),
         helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"], name="loss",
                          reduction="mean")],
        "with_loss",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 8]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, ["batch"])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        initializer=[weights("w", (4, 8)), weights("b", (4,))])
    save(helper.make_model(loss_graph, opset_imports=[helper.make_opsetid("", 13)]), out_dir, "with_loss.onnx")
    # Its twin without the loss (the same weights; the logits are the output), and one whose
    # loss sums instead of averaging, which the engine's loss is not.
    logits_graph = helper.make_graph(
        [helper.make_node("Gemm", ["input", "w", "b"], ["logits"], name="classifier", transB=1)], "without_loss",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 4])],
        initializer=[weights("w", (4, 8)), weights("b", (4,))])
    save(helper.make_model(logits_graph, opset_imports=[helper.make_opsetid("", 13)]), out_dir, "without_loss.onnx")
    loss_graph.node[1].attribute[0].s = b"sum"
    save(helper.make_model(loss_graph, opset_imports=[helper.make_opsetid("", 13)]), out_dir, "summed_loss.onnx")

    # MatMul weights stored [K, N] and read as they are (TensorFlow's and hand-built graphs), one
    # of them square, so that only the layout, not the shape, tells which way it is read.
    plain_graph = helper.make_graph(
        [helper.make_node("MatMul", ["input", "w1"], ["h1"], name="dense1"),
         helper.make_node("Add", ["h1", "b1"], ["a1"], name="bias1"),
         helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
         helper.make_node("MatMul", ["r1", "w2"], ["h2"], name="dense2"),
         helper.make_node("Tanh", ["h2"], ["t2"], name="tanh2"),
         helper.make_node("MatMul", ["t2", "w3"], ["output"], name="dense3")],
        "plain_matmul", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 4])],
        initializer=[weights("w1", (8, 6)), weights("b1", (6,)), weights("w2", (6, 6)), weights("w3", (6, 4))])
    save(helper.make_model(plain_graph, opset_imports=[helper.make_opsetid("", 13)]), out_dir, "plain_matmul.onnx")

    # Grouped, strided, dilated convolution and a transposed one, for their FLOPs.
    conv_graph = helper.make_graph(
        [helper.make_node("Conv", ["input", "cw", "cb"], ["conv"], name="conv", group=2, strides=[2, 2],
                          pads=[1, 1, 1, 1], dilations=[1, 1], kernel_shape=[3, 3]),
         helper.make_node("ConvTranspose", ["conv", "tw"], ["output"], name="deconv", strides=[2, 2],
                          kernel_shape=[2, 2])],
        "convs", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 4, 8, 8])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [2, 5, 8, 8])],
        initializer=[weights("cw", (6, 2, 3, 3)), weights("cb", (6,)), weights("tw", (6, 5, 2, 2))])
    save(helper.make_model(conv_graph, opset_imports=[helper.make_opsetid("", 13)]), out_dir, "convs.onnx")

    # A regression head: its bias has one value but dimensions ([1]), so it trains; the rank-0
    # epsilon added before is a constant.
    regression_graph = helper.make_graph(
        [helper.make_node("Add", ["input", "epsilon"], ["shifted"], name="shift"),
         helper.make_node("MatMul", ["shifted", "w"], ["mm"], name="matmul"),
         helper.make_node("Add", ["mm", "b"], ["output"], name="bias")],
        "regression", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [2, 1])],
        initializer=[weights("w", (8, 1)), weights("b", (1,)),
                     numpy_helper.from_array(np.array(1e-5, dtype=np.float32), "epsilon")])
    save(helper.make_model(regression_graph, opset_imports=[helper.make_opsetid("", 13)]), out_dir,
         "regression.onnx")

    with open(os.path.join(out_dir, "not_onnx.onnx"), "w") as f:
        f.write("name,value\nlearning_rate,0.01\nbatch_size,64\n")


if __name__ == "__main__":
    main()
