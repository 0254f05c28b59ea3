#!/usr/bin/python3
"""Writes a MatMul model whose 2x2 f32 initializer 'w' is external data at LOCATION.

Usage: external_location.py OUT.onnx LOCATION
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

out, location = sys.argv[1], sys.argv[2]
w = numpy_helper.from_array(np.zeros((2, 2), np.float32), "w")
w.ClearField("raw_data")
w.data_location = TensorProto.EXTERNAL
entry = w.external_data.add()
entry.key, entry.value = "location", location
graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
with open(out, "wb") as f:
    f.write(model.SerializeToString())
