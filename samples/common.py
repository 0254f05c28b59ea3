"""Shared helpers for the sample exporters: seeding, ONNX export, reference inputs/outputs.

Every sample follows DESIGN.md's training convention: the model's first output is the scalar
loss, the initializers are the trainable parameters, and the remaining graph inputs are the batch.
Run with /usr/bin/python3 (torch 1.13, onnx 1.12).
"""
import os
import random
import warnings

import numpy as np
import onnx
import torch

OPSET = 14

# Tracing turns Python-number shape arithmetic into constants; that is intended here.
warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def export_sample(name, model, inputs, input_names, output_names, out_root, dynamic_axes=None):
    """Exports `model` to <out_root>/<name>/<name>.onnx and writes the reference set.

    inputs: tuple of tensors in forward() order, named by input_names.
    The reference outputs are PyTorch's, computed in eval mode with the same inputs.
    dynamic_axes: exported symbolically (so the graph computes shapes with Shape/Gather/...),
    then every graph input and output is pinned to the example's static shape: plait compiles
    static shapes only.
    """
    model.eval()
    sample_dir = os.path.join(out_root, name)
    os.makedirs(os.path.join(sample_dir, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(sample_dir, "expected"), exist_ok=True)
    onnx_path = os.path.join(sample_dir, name + ".onnx")

    # do_constant_folding=False keeps the graph as a training framework emits it before any
    # cleanup (Shape/Gather/Unsqueeze/Concat chains, Constant nodes, unfolded Transposes):
    # the importer has to cope with exactly that. Parameters stay initializers.
    torch.onnx.export(
        model, inputs, onnx_path,
        input_names=input_names, output_names=output_names,
        opset_version=OPSET, do_constant_folding=False,
        training=torch.onnx.TrainingMode.EVAL,
        export_params=True, keep_initializers_as_inputs=False,
        dynamic_axes=dynamic_axes)

    with torch.no_grad():
        outputs = model(*inputs)
    if not isinstance(outputs, (tuple, list)):
        outputs = (outputs,)

    onnx_model = onnx.load(onnx_path)
    if dynamic_axes:
        _pin_shapes(onnx_model, inputs, outputs)
        onnx.save(onnx_model, onnx_path)
    onnx.checker.check_model(onnx_model, full_check=True)
    _check_convention(onnx_model, input_names, output_names, list(model.named_parameters()))

    assert len(outputs) == len(output_names)
    assert outputs[0].dim() == 0, "first output must be the scalar loss"

    for n, t in zip(input_names, inputs):
        np.save(os.path.join(sample_dir, "inputs", n + ".npy"), t.numpy())
    for n, t in zip(output_names, outputs):
        np.save(os.path.join(sample_dir, "expected", n + ".npy"), t.numpy())

    ops = sorted({n.op_type for n in onnx_model.graph.node})
    params = sum(int(np.prod(i.dims)) for i in onnx_model.graph.initializer)
    print("%s: %d nodes, %d parameters, %d bytes, loss %.6f, ops: %s" % (
        onnx_path, len(onnx_model.graph.node), params, os.path.getsize(onnx_path),
        float(outputs[0]), " ".join(ops)))
    return onnx_path


def _pin_shapes(onnx_model, inputs, outputs):
    graph = onnx_model.graph
    inits = {i.name for i in graph.initializer}
    batch_inputs = [i for i in graph.input if i.name not in inits]
    for value_info, tensors in ((batch_inputs, inputs), (graph.output, outputs)):
        for vi, t in zip(value_info, tensors):
            shape = vi.type.tensor_type.shape
            del shape.dim[:]
            for d in t.shape:
                shape.dim.add().dim_value = d
    # Intermediate value_info carries the symbolic dims; shape inference recomputes them.
    del graph.value_info[:]


def _check_convention(onnx_model, input_names, output_names, model_params):
    graph = onnx_model.graph
    inits = {i.name for i in graph.initializer}
    batch_inputs = [i.name for i in graph.input if i.name not in inits]
    assert batch_inputs == list(input_names), (batch_inputs, input_names)
    assert [o.name for o in graph.output] == list(output_names)
    params = {n for n, _ in model_params}
    assert inits == params, "initializers %s != parameters %s" % (sorted(inits), sorted(params))
    # Parameters must be distinct tensors: no Identity aliases of deduplicated initializers.
    for node in graph.node:
        assert not (node.op_type == "Identity" and node.input[0] in inits), \
            "initializer %s aliased by %s" % (node.input[0], node.output[0])

