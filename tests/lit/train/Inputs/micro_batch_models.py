"""Writes ONNX models that --micro-batches cannot split: DIR/{scalar,mismatch,no-input,pinned}.onnx."""
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

root = pathlib.Path(sys.argv[1])
root.mkdir(parents=True, exist_ok=True)
w = numpy_helper.from_array(np.ones((3, 3), np.float32), "w")
loss = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])


def save(name, inputs, nodes):
    graph = helper.make_graph(nodes, name, inputs, [loss], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, str(root / (name + ".onnx")))


# A scalar input has no batch dimension.
save("scalar", [helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
                helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
     [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Mul", ["h", "s"], ["p"]),
      helper.make_node("ReduceMean", ["p"], ["loss"], keepdims=0)])
# Inputs that lead with different sizes have no common batch.
save("mismatch", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3]),
                  helper.make_tensor_value_info("m", TensorProto.FLOAT, [3, 3])],
     [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("MatMul", ["h", "m"], ["p"]),
      helper.make_node("ReduceMean", ["p"], ["loss"], keepdims=0)])
# No graph input at all: nothing to split.
save("no-input", [], [helper.make_node("ReduceMean", ["w"], ["loss"], keepdims=0)])
# A Reshape to a constant shape that holds the batch (4) fails at the micro-batch size.
shape = numpy_helper.from_array(np.array([4, 3], np.int64), "shape")
graph = helper.make_graph(
    [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("MatMul", ["r", "w"], ["p"]),
     helper.make_node("ReduceMean", ["p"], ["loss"], keepdims=0)], "pinned",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1, 3])], [loss], [w, shape])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]),
          str(root / "pinned.onnx"))
