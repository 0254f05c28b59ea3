#!/usr/bin/python3
"""Writes the small ONNX models the importer's lit tests read (run with /usr/bin/python3, onnx 1.12).

Usage: gen_models.py [OUTPUT_DIR]   (default: the directory of this script)
Each model is built with onnx.helper so that the tests pin down one mapping or one diagnostic.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
F, I64, BOOL, C64 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL, TensorProto.COMPLEX64


def tensor(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def const(out, array, name=None):
    return helper.make_node("Constant", [], [out], name=name or out,
                            value=tensor(out + "_value", array))


def save(name, nodes, inputs, outputs, inits=(), opset=13, check=True, domains=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=imports, producer_name="plait-lit")
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))
    return model


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def sum_loop_body():
    """A Loop body adding x to its one loop-carried value."""
    return helper.make_graph([helper.make_node("Add", ["s_in", "x"], ["s_out"], name="add_x"),
                              helper.make_node("Identity", ["c"], ["c_out"], name="keep")],
                             "sum", [vi("it", I64, []), vi("c", BOOL, []), vi("s_in", F, [2])],
                             [vi("c_out", BOOL, []), vi("s_out", F, [2])])


def main():
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)

    # A two-layer MLP: params, function arguments, result names, Gemm/MatMul/Relu.
    save("mlp", [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["a"], name="relu"),
        helper.make_node("MatMul", ["a", "fc2.weight"], ["y"], name="fc2"),
    ], [vi("x", F, [2, 4])], [vi("y", F, [2, 3])],
        [tensor("fc1.weight", f32(8, 4)), tensor("fc1.bias", f32(8)), tensor("fc2.weight", f32(8, 3))])

    # The int64 shape chain torch.onnx.export emits: everything folds to one static reshape.
    save("shape_chain", [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        const("i0", np.array(0, np.int64)),
        helper.make_node("Gather", ["s", "i0"], ["batch"], name="gather", axis=0),
        const("axes0", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["b1"], name="unsqueeze"),
        const("minus1", np.array([-1], np.int64)),
        helper.make_node("Concat", ["b1", "minus1"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"], name="reshape"),
        helper.make_node("Size", ["x"], ["n"], name="size"),
        helper.make_node("Cast", ["n"], ["nf"], name="cast", to=F),
        helper.make_node("Sqrt", ["nf"], ["root"], name="sqrt"),
        helper.make_node("Div", ["flat", "root"], ["y"], name="scale"),
    ], [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 12])])

    # Slice normalisation: negative indices, INT64_MAX ends, negative steps, omitted axes.
    big = np.iinfo(np.int64).max
    save("slice", [
        const("starts", np.array([1, -1], np.int64)),
        const("ends", np.array([big, -big], np.int64)),
        const("axes", np.array([0, 2], np.int64)),
        const("steps", np.array([2, -1], np.int64)),
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="slice"),
        const("s2", np.array([10], np.int64)),
        const("e2", np.array([20], np.int64)),
        helper.make_node("Slice", ["x", "s2", "e2"], ["z"], name="empty_slice"),
    ], [vi("x", F, [5, 3, 4])], [vi("y", F, [2, 3, 4]), vi("z", F, [0, 3, 4])])

    # Convolution and pooling, with auto_pad and a 1-D convolution.
    save("conv_pool", [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", auto_pad="SAME_UPPER",
                         strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                         ["n"], name="bn", epsilon=1e-3),
        helper.make_node("MaxPool", ["n"], ["p"], name="maxpool", kernel_shape=[2, 2],
                         pads=[0, 0, 1, 1], ceil_mode=1),
        helper.make_node("AveragePool", ["p"], ["q"], name="avgpool", kernel_shape=[2, 2],
                         count_include_pad=1, pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["q"], ["y"], name="gap"),
        helper.make_node("Conv", ["s", "w1"], ["z"], name="conv1d", pads=[1, 1], dilations=[2]),
    ], [vi("x", F, [1, 3, 7, 7]), vi("s", F, [2, 3, 10])],
        [vi("y", F, [1, 4, 1, 1]), vi("z", F, [2, 5, 8])],
        [tensor("w", f32(4, 3, 3, 3)), tensor("b", f32(4)), tensor("bn.scale", f32(4)),
         tensor("bn.bias", f32(4)), tensor("bn.mean", f32(4)),
         tensor("bn.var", np.abs(f32(4))), tensor("w1", f32(5, 3, 3))], opset=15)

    # Normalisations, softmax and the losses (LayerNormalization needs opset 17).
    save("norm_loss", [
        helper.make_node("LayerNormalization", ["x", "ln.weight", "ln.bias"], ["h"], name="ln",
                         axis=-1, epsilon=1e-6),
        helper.make_node("Softmax", ["h"], ["p"], name="softmax", axis=1),
        helper.make_node("SoftmaxCrossEntropyLoss", ["h", "labels"], ["loss", "logp"], name="sce",
                         reduction="mean", ignore_index=-100),
        helper.make_node("NegativeLogLikelihoodLoss", ["logp", "labels"], ["nll"], name="nll",
                         reduction="sum"),
    ], [vi("x", F, [4, 10]), vi("labels", I64, [4])],
        [vi("loss", F, []), vi("p", F, [4, 10]), vi("nll", F, [])],
        [tensor("ln.weight", f32(10)), tensor("ln.bias", f32(10))], opset=17)

    # Ops plait has no single op for.
    save("decompose", [
        helper.make_node("Selu", ["x"], ["selu"], name="selu"),
        helper.make_node("HardSwish", ["x"], ["hswish"], name="hardswish"),
        helper.make_node("Softsign", ["x"], ["softsign"], name="softsign"),
        helper.make_node("ReduceLogSumExp", ["x"], ["lse"], name="lse", axes=[1], keepdims=0),
        const("lo", np.array(-1.0, np.float32)),
        const("hi", np.array(1.0, np.float32)),
        helper.make_node("Clip", ["x", "lo", "hi"], ["clip"], name="clip"),
        const("reps", np.array([2, 1], np.int64)),
        helper.make_node("Tile", ["x", "reps"], ["tile"], name="tile"),
        const("pads", np.array([0, -1, 1, 2], np.int64)),
        helper.make_node("Pad", ["x", "pads"], ["pad"], name="pad"),
        helper.make_node("Mod", ["i", "j"], ["mod"], name="fmod", fmod=1),
        helper.make_node("Max", ["x", "x", "x"], ["max3"], name="max3"),
    ], [vi("x", F, [2, 3]), vi("i", I64, [2]), vi("j", I64, [2])],
        [vi("selu", F, [2, 3]), vi("hswish", F, [2, 3]), vi("softsign", F, [2, 3]),
         vi("lse", F, [2]), vi("clip", F, [2, 3]), vi("tile", F, [4, 3]), vi("pad", F, [3, 4]),
         vi("mod", I64, [2]), vi("max3", F, [2, 3])], opset=14)

    # More decompositions: Pad in reflect and edge modes, CumSum, Hardmax.
    save("decompose2", [
        const("pads", np.array([0, 2, 0, 1], np.int64)),
        helper.make_node("Pad", ["x", "pads"], ["reflect"], name="pad_reflect", mode="reflect"),
        helper.make_node("Pad", ["x", "pads"], ["edge"], name="pad_edge", mode="edge"),
        const("axis", np.array(1, np.int64)),
        helper.make_node("CumSum", ["x", "axis"], ["cumsum"], name="cumsum", exclusive=1),
        helper.make_node("Hardmax", ["x"], ["hardmax"], name="hardmax", axis=1),
    ], [vi("x", F, [2, 3])],
        [vi("reflect", F, [2, 6]), vi("edge", F, [2, 6]), vi("cumsum", F, [2, 3]),
         vi("hardmax", F, [2, 3])], opset=14)

    # A causal mask from constants (torch's triu/where idiom) folds into one plait.constant.
    save("fold_mask", [
        const("shape", np.array([4, 4], np.int64)),
        helper.make_node("ConstantOfShape", ["shape"], ["ones"], name="ones",
                         value=tensor("one", np.array([1.0], np.float32))),
        helper.make_node("Trilu", ["ones"], ["tri"], name="tril", upper=0),
        const("zero", np.array(0.0, np.float32)),
        helper.make_node("Equal", ["tri", "zero"], ["masked"], name="equal"),
        const("neg", np.array(-1e9, np.float32)),
        helper.make_node("Where", ["masked", "neg", "zero"], ["bias"], name="where"),
        helper.make_node("Add", ["scores", "bias"], ["y"], name="add_mask"),
        helper.make_node("Dropout", ["y"], ["d", "mask"], name="dropout"),
        helper.make_node("Identity", ["d"], ["out"], name="identity"),
    ], [vi("scores", F, [2, 4, 4])], [vi("out", F, [2, 4, 4]), vi("mask", BOOL, [2, 4, 4])],
        opset=14)

    # Weights stored as external data next to the model.
    model = save("external_data", [
        helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul"),
    ], [vi("x", F, [1, 2])], [vi("y", F, [1, 2])],
        [tensor("w", np.array([[1, 2], [3, 4]], np.float32))])
    # onnx appends to an existing data file: start from none, so a re-run writes the same bytes.
    if os.path.exists(os.path.join(OUT, "external_data.bin")):
        os.remove(os.path.join(OUT, "external_data.bin"))
    onnx.save(model, os.path.join(OUT, "external_data.onnx"), save_as_external_data=True,
              location="external_data.bin", size_threshold=0)

    # --- Diagnostics -------------------------------------------------------------------
    # (NonMaxSuppression: its output's size depends on the data, which plait does not plan.)
    save("unsupported_op", [
        helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["kept"], name="nms1"),
    ], [vi("boxes", F, [1, 3, 4]), vi("scores", F, [1, 1, 3])], [vi("kept", I64, [None, 3])])

    save("const_input", [
        helper.make_node("Reshape", ["x", "target_shape"], ["y"], name="reshape1"),
    ], [vi("x", F, [2, 6]), vi("target_shape", I64, [2])], [vi("y", F, [3, 4])], opset=14)
    np.save(os.path.join(OUT, "target_shape.npy"), np.array([3, 4], np.int64))
    with open(os.path.join(OUT, "target_shape.pb"), "wb") as f:
        f.write(tensor("target_shape", np.array([4, -1], np.int64)).SerializeToString())

    save("derived_const_input", [
        helper.make_node("Cast", ["sizes"], ["sizes64"], name="cast_sizes", to=I64),
        helper.make_node("Reshape", ["x", "sizes64"], ["y"], name="reshape2"),
    ], [vi("x", F, [2, 6]), vi("sizes", TensorProto.INT32, [2])], [vi("y", F, [3, 4])])

    save("dynamic_dim", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
         [vi("x", F, ["batch", 4])], [vi("y", F, ["batch", 4])])
    save("complex_input", [helper.make_node("Identity", ["x"], ["y"], name="id")],
         [vi("x", C64, [4])], [vi("y", C64, [4])])
    save("opset11", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
         [vi("x", F, [4])], [vi("y", F, [4])], opset=11)
    # Old opsets that plait's lift refuses (legacy-opset.test): Tile-1 (tiles and axis as
    # inputs) has no rule; a per-element BatchNorm (spatial=0); a training-mode BatchNorm-6
    # without its running statistics; Dropout-6's mask (of the data's type); a broadcast axis
    # beyond A's rank, and a B that does not fit from its axis.
    save("opset5_tile", [helper.make_node("Tile", ["x", "tiles", "axis"], ["y"], name="tile1")],
         [vi("x", F, [4]), vi("tiles", I64, []), vi("axis", I64, [])], [vi("y", F, [8])],
         opset=5)
    bn_inputs = [vi("x", F, [2, 3, 4])] + [vi(n, F, [3]) for n in ("s", "b", "m", "v")]
    save("opset6_bn_spatial0", [helper.make_node(
        "BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn0", is_test=1,
        spatial=0)], bn_inputs, [vi("y", F, [2, 3, 4])], opset=6)
    save("opset6_bn_train_one_output", [helper.make_node(
        "BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn_train")],
        bn_inputs, [vi("y", F, [2, 3, 4])], opset=6)
    save("opset6_dropout_mask", [helper.make_node("Dropout", ["x"], ["y", "mask"],
                                                  name="drop_mask", is_test=1)],
         [vi("x", F, [4])], [vi("y", F, [4]), vi("mask", F, [4])], opset=6)
    save("opset6_add_axis_range", [helper.make_node("Add", ["a", "b"], ["y"], name="add_far",
                                                    broadcast=1, axis=2)],
         [vi("a", F, [2, 3]), vi("b", F, [3])], [vi("y", F, [2, 3])], opset=6)
    save("opset6_add_misfit", [helper.make_node("Add", ["a", "b"], ["y"], name="add_misfit",
                                                broadcast=1, axis=1)],
         [vi("a", F, [2, 3]), vi("b", F, [3, 4])], [vi("y", F, [2, 3])], opset=6)
    # Random draws (random.test): RandomUniform, RandomNormalLike in double, Bernoulli of a
    # probability tensor as bool; and what they refuse.
    save("random_ops", [
        helper.make_node("RandomUniform", [], ["u"], name="uniform", shape=[100, 100],
                         low=-1.0, high=2.0, seed=5.0),
        helper.make_node("RandomNormalLike", ["x"], ["n"], name="normal", mean=3.0, scale=0.5,
                         dtype=TensorProto.DOUBLE),
        helper.make_node("Bernoulli", ["p"], ["b"], name="coin", dtype=BOOL),
    ], [vi("x", F, [100, 100]), vi("p", F, [100, 100])],
        [vi("u", F, [100, 100]), vi("n", TensorProto.DOUBLE, [100, 100]),
         vi("b", BOOL, [100, 100])], opset=15)
    save("random_int_dtype", [helper.make_node("RandomUniform", [], ["u"], name="ints",
                                               shape=[4], dtype=I64)],
         [], [vi("u", I64, [4])], check=False)
    save("random_low_above_high", [helper.make_node("RandomUniform", [], ["u"], name="upside",
                                                    shape=[4], low=2.0, high=1.0)],
         [], [vi("u", F, [4])])
    # If (control-flow.test): a condition folded from x's shape (the then branch is taken);
    # one that is a graph input, known only at run time; a branch training a param of the
    # enclosing graph.
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")],
                               "then", [], [vi("t", F, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg")],
                               "else", [], [vi("e", F, [2, 3])])
    save("if_shape", [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        const("zero", np.array(0, np.int64)),
        helper.make_node("Gather", ["s", "zero"], ["batch"], name="batch"),
        const("one", np.array(1, np.int64)),
        helper.make_node("Greater", ["batch", "one"], ["cond"], name="batched"),
        helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_g,
                         else_branch=else_g),
    ], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])
    save("if_runtime", [helper.make_node("If", ["c"], ["y"], name="branch_rt",
                                         then_branch=then_g, else_branch=else_g)],
         [vi("x", F, [2, 3]), vi("c", BOOL, [])], [vi("y", F, [2, 3])])
    train_then = helper.make_graph([
        helper.make_node("MatMul", ["x", "w"], ["m"], name="project"),
        helper.make_node("Mul", ["m", "m"], ["sq"], name="square"),
    ], "then", [], [vi("sq", F, [4, 2])])
    train_else = helper.make_graph([helper.make_node("Identity", ["x2"], ["same"], name="keep")],
                                   "else", [], [vi("same", F, [4, 2])])
    save("if_train", [
        const("yes", np.array(True)),
        helper.make_node("Slice", ["x", "s0", "s2", "s1"], ["x2"], name="first_two"),
        helper.make_node("If", ["yes"], ["out"], name="branch_train", then_branch=train_then,
                         else_branch=train_else),
        helper.make_node("ReduceMean", ["out"], ["loss"], name="loss", keepdims=0),
    ], [vi("x", F, [4, 3])], [vi("loss", F, [])],
        inits=[tensor("w", np.full((3, 2), 0.5, np.float32)), tensor("s0", np.array([0])),
               tensor("s2", np.array([2])), tensor("s1", np.array([1]))])
    # Loop and Scan (control-flow.test), unrolled at import.
    # loop_rows: for i < 3: acc += x[i] (the iteration number folds into a static slice), and
    # each row squared is a scan output, stacked [3, 4].
    rows_body = helper.make_graph([
        helper.make_node("Gather", ["x", "i"], ["row"], name="row", axis=0),
        helper.make_node("Add", ["acc_in", "row"], ["acc_out"], name="accumulate"),
        helper.make_node("Mul", ["row", "row"], ["sq"], name="square"),
        helper.make_node("Identity", ["c_in"], ["c_out"], name="keep_going"),
    ], "rows", [vi("i", I64, []), vi("c_in", BOOL, []), vi("acc_in", F, [4])],
        [vi("c_out", BOOL, []), vi("acc_out", F, [4]), vi("sq", F, [4])])
    save("loop_rows", [
        helper.make_node("Loop", ["m", "", "acc0"], ["acc", "squares"], name="rows_loop",
                         body=rows_body),
    ], [vi("x", F, [3, 4])], [vi("acc", F, [4]), vi("squares", F, [3, 4])],
        inits=[tensor("m", np.array(3, np.int64)), tensor("acc0", np.zeros(4, np.float32))])
    # loop_while: a while loop (no trip count) whose condition folds: k counts 0, 1, 2, ... and
    # the loop goes on while k + 1 < 4, adding x each time (4 iterations).
    while_body = helper.make_graph([
        const("one", np.array(1, np.int64), name="one"),
        const("four", np.array(4, np.int64), name="four"),
        helper.make_node("Add", ["k_in", "one"], ["k_out"], name="count"),
        helper.make_node("Less", ["k_out", "four"], ["go"], name="test"),
        helper.make_node("Add", ["s_in", "x"], ["s_out"], name="add_x"),
    ], "while", [vi("it", I64, []), vi("c", BOOL, []), vi("k_in", I64, []), vi("s_in", F, [2])],
        [vi("go", BOOL, []), vi("k_out", I64, []), vi("s_out", F, [2])])
    save("loop_while", [
        helper.make_node("Loop", ["", "yes", "k0", "x"], ["k", "s"], name="while_loop",
                         body=while_body),
    ], [vi("x", F, [2])], [vi("k", I64, []), vi("s", F, [2])],
        inits=[tensor("yes", np.array(True)), tensor("k0", np.array(0, np.int64))])
    # loop_runtime_cond: the body's condition depends on x, known only at run time.
    cond_body = helper.make_graph([
        helper.make_node("ReduceSum", ["s_in"], ["total"], name="total", keepdims=0),
        helper.make_node("Greater", ["total", "limit"], ["go"], name="test"),
        helper.make_node("Add", ["s_in", "x"], ["s_out"], name="add_x"),
    ], "cond", [vi("it", I64, []), vi("c", BOOL, []), vi("s_in", F, [2])],
        [vi("go", BOOL, []), vi("s_out", F, [2])])
    save("loop_runtime_cond", [
        helper.make_node("Loop", ["m", "yes", "x"], ["s"], name="until_loop", body=cond_body),
    ], [vi("x", F, [2])], [vi("s", F, [2])],
        inits=[tensor("m", np.array(10, np.int64)), tensor("yes", np.array(True)),
               tensor("limit", np.array(5.0, np.float32))])
    # loop_forever: neither a trip count nor a condition; loop_long: 5,000 iterations;
    # loop_trip_input: the trip count is a graph input; loop_zero: no iteration, and a scan
    # output.
    save("loop_forever", [helper.make_node("Loop", ["", "", "acc0"], ["acc", "squares"],
                                           name="endless", body=rows_body)],
         [vi("x", F, [3, 4])], [vi("acc", F, [4])],
         inits=[tensor("acc0", np.zeros(4, np.float32))])
    save("loop_long", [helper.make_node("Loop", ["m", "", "acc0"], ["acc"], name="long_loop",
                                        body=sum_loop_body())],
         [vi("x", F, [2])], [vi("acc", F, [2])],
         inits=[tensor("m", np.array(5000, np.int64)), tensor("acc0", np.zeros(2, np.float32))])
    save("loop_trip_input", [helper.make_node("Loop", ["m", "", "acc0"], ["acc", "squares"],
                                              name="rows_loop", body=rows_body)],
         [vi("x", F, [3, 4]), vi("m", I64, [])], [vi("acc", F, [4]), vi("squares", F, [3, 4])],
         inits=[tensor("acc0", np.zeros(4, np.float32))])
    save("loop_zero", [helper.make_node("Loop", ["m", "", "acc0"], ["acc", "squares"],
                                        name="rows_loop", body=rows_body)],
         [vi("x", F, [3, 4])], [vi("acc", F, [4]), vi("squares", F, [0, 4])],
         inits=[tensor("m", np.array(0, np.int64)), tensor("acc0", np.zeros(4, np.float32))])
    # loop_nested: 100 iterations of a Loop of 1,000 (100,000 body nodes in all).
    inner = helper.make_node("Loop", ["m_inner", "", "s_in"], ["s_out"], name="inner_loop",
                             body=sum_loop_body())
    outer_body = helper.make_graph([inner, helper.make_node("Identity", ["c"], ["c_out"],
                                                            name="keep")],
                                   "outer", [vi("it", I64, []), vi("c", BOOL, []),
                                             vi("s_in", F, [2])],
                                   [vi("c_out", BOOL, []), vi("s_out", F, [2])])
    save("loop_nested", [helper.make_node("Loop", ["m_outer", "", "acc0"], ["acc"],
                                          name="outer_loop", body=outer_body)],
         [vi("x", F, [2])], [vi("acc", F, [2])],
         inits=[tensor("m_outer", np.array(100, np.int64)),
                tensor("m_inner", np.array(1000, np.int64)),
                tensor("acc0", np.zeros(2, np.float32))])
    # scan_reverse: a running sum over axis 1 of x [2, 3], read in reverse and stacked in
    # reverse (a suffix sum: [x0+x1+x2, x1+x2, x2] per row) along axis 1.
    sum_body = helper.make_graph([
        helper.make_node("Add", ["sum_in", "next"], ["sum_out"], name="add"),
        helper.make_node("Identity", ["sum_out"], ["scan_out"], name="out"),
    ], "sum", [vi("sum_in", F, [2]), vi("next", F, [2])],
        [vi("sum_out", F, [2]), vi("scan_out", F, [2])])
    save("scan_reverse", [
        helper.make_node("Scan", ["zeros", "x"], ["total", "suffix"], name="suffix_scan",
                         body=sum_body, num_scan_inputs=1, scan_input_axes=[1],
                         scan_input_directions=[1], scan_output_axes=[1],
                         scan_output_directions=[1]),
    ], [vi("x", F, [2, 3])], [vi("total", F, [2]), vi("suffix", F, [2, 3])],
        inits=[tensor("zeros", np.zeros(2, np.float32))])
    # scan_lengths: two scan inputs of 3 and 4 steps; scan8_lens: an opset-8 (batched) Scan
    # whose sequence_lens is shorter than its inputs.
    pair_body = helper.make_graph([
        helper.make_node("Add", ["sum_in", "a"], ["s1"], name="add_a"),
        helper.make_node("Add", ["s1", "b"], ["sum_out"], name="add_b"),
    ], "pair", [vi("sum_in", F, [2]), vi("a", F, [2]), vi("b", F, [2])],
        [vi("sum_out", F, [2])])
    save("scan_lengths", [
        helper.make_node("Scan", ["zeros", "a", "b"], ["total"], name="pair_scan",
                         body=pair_body, num_scan_inputs=2),
    ], [vi("a", F, [3, 2]), vi("b", F, [4, 2])], [vi("total", F, [2])],
        inits=[tensor("zeros", np.zeros(2, np.float32))], check=False)
    save("scan8_lens", [
        helper.make_node("Scan", ["lens", "zeros", "x"], ["total", "sums"], name="batched_scan",
                         body=sum_body, num_scan_inputs=1),
    ], [vi("x", F, [1, 3, 2])], [vi("total", F, [1, 2]), vi("sums", F, [1, 3, 2])],
        inits=[tensor("zeros", np.zeros((1, 2), np.float32)),
               tensor("lens", np.array([2], np.int32))], opset=8)
    # Sequences known at import (sequence.test): c inserted before [a, b], stacked along a
    # new axis 1; x split into its 3 rows (keepdims=0) and the last one taken; the number of
    # rows from SequenceLength.
    save("sequence_ops", [
        helper.make_node("SequenceConstruct", ["a", "b"], ["ab"], name="construct"),
        const("zero", np.array(0, np.int64)),
        helper.make_node("SequenceInsert", ["ab", "c", "zero"], ["cab"], name="insert_front"),
        helper.make_node("ConcatFromSequence", ["cab"], ["stacked"], name="stack", axis=1,
                         new_axis=1),
        helper.make_node("SplitToSequence", ["x"], ["rows"], name="rows", axis=0, keepdims=0),
        const("last", np.array(-1, np.int64)),
        helper.make_node("SequenceAt", ["rows", "last"], ["row"], name="last_row"),
        helper.make_node("SequenceLength", ["rows"], ["n"], name="count"),
    ], [vi("a", F, [2]), vi("b", F, [2]), vi("c", F, [2]), vi("x", F, [3, 4])],
        [vi("stacked", F, [2, 3]), vi("row", F, [4]), vi("n", I64, [])])
    # What a sequence cannot do in plait, each in one line: a position out of range, a
    # position known only at run time, a sequence as a graph output, a sequence where a tensor
    # is expected, an empty sequence concatenated, a tensor of another element type inserted.
    seq_ab = [helper.make_node("SequenceConstruct", ["a", "b"], ["ab"], name="construct")]
    ab_inputs = [vi("a", F, [2]), vi("b", F, [2])]
    save("sequence_at_range", seq_ab + [
        const("five", np.array(5, np.int64)),
        helper.make_node("SequenceAt", ["ab", "five"], ["y"], name="at_five"),
    ], ab_inputs, [vi("y", F, [2])])
    save("sequence_at_runtime", seq_ab + [
        helper.make_node("SequenceAt", ["ab", "p"], ["y"], name="at_p"),
    ], ab_inputs + [vi("p", I64, [])], [vi("y", F, [2])])
    save("sequence_output", seq_ab, ab_inputs,
         [helper.make_value_info("ab", helper.make_sequence_type_proto(
             helper.make_tensor_type_proto(F, [2])))])
    save("sequence_as_tensor", seq_ab + [helper.make_node("Relu", ["ab"], ["y"], name="relu")],
         ab_inputs, [vi("y", F, [2])], check=False)
    save("sequence_empty_concat", [
        helper.make_node("SequenceEmpty", [], ["e"], name="empty", dtype=F),
        helper.make_node("ConcatFromSequence", ["e"], ["y"], name="concat_empty", axis=0),
    ], [], [vi("y", F, [0])])
    save("sequence_insert_type", seq_ab + [
        helper.make_node("SequenceInsert", ["ab", "i"], ["abi"], name="insert_int"),
        const("zero", np.array(0, np.int64)),
        helper.make_node("SequenceAt", ["abi", "zero"], ["y"], name="first"),
    ], ab_inputs + [vi("i", I64, [2])], [vi("y", F, [2])], check=False)
    # A sequence where Scan takes a tensor to scan.
    scan_body = helper.make_graph([helper.make_node("Add", ["s", "x_t"], ["so"], name="add")],
                                  "step", [vi("s", F, [2]), vi("x_t", F, [2])],
                                  [vi("so", F, [2])])
    save("sequence_scanned", [
        helper.make_node("SequenceConstruct", ["x"], ["seq"], name="construct"),
        helper.make_node("Scan", ["z", "seq"], ["y"], name="scan_seq", body=scan_body,
                         num_scan_inputs=1),
    ], [vi("z", F, [2]), vi("x", F, [3, 2])], [vi("y", F, [2])], check=False)
    # Optionals known at import: one holding x (its value taken, HasElement folded true) and
    # an empty one (HasElement folded false); taking the value of the empty one, or returning
    # an optional, is refused.
    opt_type = helper.make_tensor_type_proto(F, [2])
    save("optional_ops", [
        helper.make_node("Optional", ["x"], ["ox"], name="wrap"),
        helper.make_node("OptionalGetElement", ["ox"], ["y"], name="unwrap"),
        helper.make_node("OptionalHasElement", ["ox"], ["has_x"], name="has_x"),
        helper.make_node("Optional", [], ["none"], name="nothing", type=opt_type),
        helper.make_node("OptionalHasElement", ["none"], ["has_none"], name="has_none"),
    ], [vi("x", F, [2])], [vi("y", F, [2]), vi("has_x", BOOL, []), vi("has_none", BOOL, [])],
        opset=16)
    save("optional_get_empty", [
        helper.make_node("Optional", [], ["none"], name="nothing", type=opt_type),
        helper.make_node("OptionalGetElement", ["none"], ["y"], name="unwrap_none"),
    ], [], [vi("y", F, [2])], opset=16)
    save("optional_output", [helper.make_node("Optional", ["x"], ["ox"], name="wrap")],
         [vi("x", F, [2])], [helper.make_value_info("ox", helper.make_optional_type_proto(
             opt_type))], opset=16)
    save("custom_domain", [helper.make_node("FusedThing", ["x"], ["y"], name="fused",
                                            domain="com.example")],
         [vi("x", F, [4])], [vi("y", F, [4])], check=False, domains=["com.example"])
    save("bad_reshape", [
        const("shape", np.array([5, -1], np.int64)),
        helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape3"),
    ], [vi("x", F, [2, 6])], [vi("y", F, [5, 2])], check=False)
    save("pad_wrap", [
        const("pads", np.array([1, 1], np.int64)),
        helper.make_node("Pad", ["x", "pads"], ["y"], name="pad1", mode="wrap"),
    ], [vi("x", F, [4])], [vi("y", F, [6])])
    # Training-mode Dropout: x times a mask drawn per step (with its mask output); a ratio of
    # 1 is refused.
    save("dropout_training", [
        const("ratio", np.array(0.2, np.float32)),
        const("training", np.array(True)),
        helper.make_node("Dropout", ["x", "ratio", "training"], ["y", "kept"], name="drop",
                         seed=42),
    ], [vi("x", F, [2, 4])], [vi("y", F, [2, 4]), vi("kept", BOOL, [2, 4])])
    save("dropout_ratio_one", [
        const("ratio", np.array(1.0, np.float32)),
        const("training", np.array(True)),
        helper.make_node("Dropout", ["x", "ratio", "training"], ["y"], name="all"),
    ], [vi("x", F, [4])], [vi("y", F, [4])])
    save("conv4d", [helper.make_node("Conv", ["x", "w"], ["y"], name="conv4")],
         [vi("x", F, [1, 1, 2, 2, 2, 2]), vi("w", F, [1, 1, 1, 1, 1, 1])],
         [vi("y", F, [1, 1, 2, 2, 2, 2])])
    save("max_pool_4d", [helper.make_node("MaxPool", ["x"], ["y"], name="max4",
                                          kernel_shape=[1, 1, 1, 1])],
         [vi("x", F, [1, 1, 2, 2, 2, 2])], [vi("y", F, [1, 1, 2, 2, 2, 2])])
    save("max_pool_3d_indices", [
        helper.make_node("MaxPool", ["x"], ["y", "at"], name="max3i", kernel_shape=[2, 2, 2]),
    ], [vi("x", F, [1, 1, 2, 2, 2])], [vi("y", F, [1, 1, 1, 1, 1]), vi("at", I64, [1, 1, 1, 1, 1])])
    # Transposed convolutions: 2-D grouped with output padding and a bias; 1-D with an
    # output_shape one beyond the last window's end.
    save("conv_transpose", [
        helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="deconv2d", group=2,
                         strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        helper.make_node("ConvTranspose", ["s", "w1"], ["z"], name="deconv1d", strides=[3],
                         output_shape=[16]),
    ], [vi("x", F, [1, 4, 3, 3]), vi("s", F, [2, 3, 5])],
        [vi("y", F, [1, 6, 6, 6]), vi("z", F, [2, 2, 16])],
        [tensor("w", f32(4, 3, 3, 3)), tensor("b", f32(6)), tensor("w1", f32(3, 2, 3))])
    save("conv_transpose_train", [
        helper.make_node("Conv", ["x", "w0"], ["h"], name="down", strides=[2, 2]),
        helper.make_node("ConvTranspose", ["h", "w", "b"], ["y"], name="up", strides=[2, 2],
                         output_padding=[1, 1]),
        helper.make_node("Mul", ["y", "y"], ["sq"], name="square"),
        helper.make_node("ReduceMean", ["sq"], ["loss"], name="mean", keepdims=0),
    ], [vi("x", F, [2, 3, 8, 8])], [vi("loss", F, [])],
        [tensor("w0", f32(4, 3, 3, 3)), tensor("w", f32(4, 3, 3, 3)), tensor("b", f32(3))])
    # GatherElements along axis 1, with an index tensor narrower than the data in axis 0.
    save("gather_elements", [
        helper.make_node("GatherElements", ["x", "i"], ["y"], name="pick", axis=1),
    ], [vi("x", F, [3, 4, 5]), vi("i", I64, [2, 6, 5])], [vi("y", F, [2, 6, 5])])
    np.save(os.path.join(OUT, "gather_elements_x.npy"), np.arange(60, dtype=np.float32).reshape(3, 4, 5))
    bad = (np.arange(60, dtype=np.int64).reshape(2, 6, 5) % 8) - 4  # in [-4, 4): valid
    np.save(os.path.join(OUT, "gather_elements_i.npy"), bad)
    bad = bad.copy()
    bad[1, 2, 3] = 4  # one past axis 1's 4 rows
    np.save(os.path.join(OUT, "gather_elements_i_bad.npy"), bad)
    save("gather_elements_wide", [
        helper.make_node("GatherElements", ["x", "i"], ["y"], name="pick_wide", axis=1),
    ], [vi("x", F, [2, 3]), vi("i", I64, [3, 3])], [vi("y", F, [3, 3])])
    # Resize: nearest 2x on H and 3x on W (a gather per axis); linear with align_corners to
    # sizes (gathers and weighted sums, W first); errors for both scales and sizes, and for a
    # scales list of the wrong length.
    save("resize", [
        helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up_nearest", mode="nearest"),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["z"], name="up_linear", mode="linear",
                         coordinate_transformation_mode="align_corners"),
    ], [vi("x", F, [1, 1, 2, 2])], [vi("y", F, [1, 1, 4, 6]), vi("z", F, [1, 1, 3, 2])],
        [tensor("scales", np.array([1, 1, 2, 3], np.float32)),
         tensor("sizes", np.array([1, 1, 3, 2], np.int64))])
    save("resize_both", [
        helper.make_node("Resize", ["x", "", "scales", "sizes"], ["y"], name="both"),
    ], [vi("x", F, [1, 1, 2, 2])], [vi("y", F, [1, 1, 4, 4])],
        [tensor("scales", np.array([1, 1, 2, 2], np.float32)),
         tensor("sizes", np.array([1, 1, 4, 4], np.int64))])
    save("resize_scales_rank", [
        helper.make_node("Resize", ["x", "", "scales"], ["y"], name="short"),
    ], [vi("x", F, [1, 1, 2, 2])], [vi("y", F, [1, 1, 4, 4])],
        [tensor("scales", np.array([2, 2], np.float32))], check=False)
    # Einsum: a batched matmul, a diagonal and a total; errors for a term count, a label's
    # sizes and an output label no input has.
    save("einsum", [
        helper.make_node("Einsum", ["a", "b"], ["c"], name="bmm", equation="bij, bjk -> bik"),
        helper.make_node("Einsum", ["s"], ["d"], name="diag", equation="ii->i"),
        helper.make_node("Einsum", ["a"], ["t"], name="total", equation="bij->"),
    ], [vi("a", F, [2, 3, 4]), vi("b", F, [2, 4, 5]), vi("s", F, [3, 3])],
        [vi("c", F, [2, 3, 5]), vi("d", F, [3]), vi("t", F, [])])
    save("einsum_terms", [
        helper.make_node("Einsum", ["a"], ["c"], name="two_terms", equation="ij,jk->ik"),
    ], [vi("a", F, [2, 3])], [vi("c", F, [2, 3])], check=False)
    save("einsum_sizes", [
        helper.make_node("Einsum", ["a", "b"], ["c"], name="mismatch", equation="ij,jk->ik"),
    ], [vi("a", F, [2, 3]), vi("b", F, [4, 5])], [vi("c", F, [2, 5])], check=False)
    save("einsum_output", [
        helper.make_node("Einsum", ["a"], ["c"], name="stray", equation="ij->k"),
    ], [vi("a", F, [2, 3])], [vi("c", F, [3])], check=False)
    # ScatterND (reduction none: the written rows replaced by the scatter-add of the
    # updates), GatherND, and ScatterElements with a reduction plait lacks.
    save("scatter_nd", [
        helper.make_node("ScatterND", ["x", "at", "u"], ["y"], name="put"),
        helper.make_node("GatherND", ["x", "at"], ["z"], name="take"),
    ], [vi("x", F, [4, 3]), vi("at", I64, [2, 1]), vi("u", F, [2, 3])],
        [vi("y", F, [4, 3]), vi("z", F, [2, 3])])
    save("scatter_zeros", [
        helper.make_node("ConstantOfShape", ["shape"], ["zeros"], name="zeros",
                         value=tensor("zero", np.array([0], np.float32))),
        helper.make_node("ScatterElements", ["zeros", "at", "u"], ["y"], name="pool", axis=0),
    ], [vi("at", I64, [3]), vi("u", F, [3])], [vi("y", F, [4])],
        [tensor("shape", np.array([4], np.int64))])
    save("scatter_mul", [
        helper.make_node("ScatterElements", ["x", "at", "u"], ["y"], name="times", reduction="mul"),
    ], [vi("x", F, [4]), vi("at", I64, [2]), vi("u", F, [2])], [vi("y", F, [4])], opset=16)
    save("conv_transpose_4d", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up4")],
         [vi("x", F, [1, 1, 2, 2, 2, 2]), vi("w", F, [1, 1, 1, 1, 1, 1])],
         [vi("y", F, [1, 1, 2, 2, 2, 2])])
    save("conv_transpose_output_padding", [
        helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up_pad", strides=[2, 2],
                         output_padding=[2, 0]),
    ], [vi("x", F, [1, 1, 3, 3]), vi("w", F, [1, 1, 3, 3])], [vi("y", F, [1, 1, 9, 7])])
    save("conv_transpose_output_shape", [
        helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up_shape", strides=[2, 2],
                         output_shape=[9, 7]),
    ], [vi("x", F, [1, 1, 3, 3]), vi("w", F, [1, 1, 3, 3])], [vi("y", F, [1, 1, 9, 7])])
    save("conv_transpose_channels", [
        helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up_ch", group=2),
    ], [vi("x", F, [1, 3, 3, 3]), vi("w", F, [3, 1, 3, 3])], [vi("y", F, [1, 2, 5, 5])])
    # An output plait does not compute (errors.test): inference-mode BatchNormalization-15's
    # running statistics, which ONNX defines in training mode only.
    save("batchnorm_inference_outputs", [helper.make_node(
        "BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], name="bn_outs")],
        [vi("x", F, [2, 3, 4])] + [vi(n, F, [3]) for n in ("s", "b", "m", "v")],
        [vi("y", F, [2, 3, 4]), vi("rm", F, [3]), vi("rv", F, [3])], opset=15)
    save("maxpool_indices", [
        helper.make_node("MaxPool", ["x"], ["y", "idx"], name="pool_idx", kernel_shape=[2, 2],
                         strides=[2, 2]),
    ], [vi("x", F, [1, 1, 4, 4])], [vi("y", F, [1, 1, 2, 2]), vi("idx", I64, [1, 1, 2, 2])])
    # MaxUnpool's refusals (max-unpool.test): float indices, an output_shape of other channels.
    save("max_unpool_float_indices", [
        helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="unpool_f", kernel_shape=[2, 2],
                         strides=[2, 2]),
    ], [vi("x", F, [1, 1, 2, 2]), vi("i", F, [1, 1, 2, 2])], [vi("y", F, [1, 1, 4, 4])],
        check=False)
    save("max_unpool_bad_shape", [
        const("shape", np.array([1, 3, 4, 4], np.int64)),
        helper.make_node("MaxUnpool", ["x", "i", "shape"], ["y"], name="unpool_c",
                         kernel_shape=[2, 2], strides=[2, 2]),
    ], [vi("x", F, [1, 1, 2, 2]), vi("i", I64, [1, 1, 2, 2])], [vi("y", F, [1, 3, 4, 4])])
    # RNN, GRU and LSTM unrolled: two steps of a reverse GRU (its input projection one GEMM,
    # each step a GEMM of the state), and errors for a bad W, coupled gates, an activation
    # plait lacks, int64 lengths and a sequence longer than plait unrolls.
    save("gru", [
        helper.make_node("GRU", ["x", "w", "r"], ["y", "yh"], name="gru", hidden_size=3,
                         direction="reverse"),
    ], [vi("x", F, [2, 1, 4]), vi("w", F, [1, 9, 4]), vi("r", F, [1, 9, 3])],
        [vi("y", F, [2, 1, 1, 3]), vi("yh", F, [1, 1, 3])], opset=14)
    save("rnn_w_shape", [
        helper.make_node("RNN", ["x", "w", "r"], ["", "yh"], name="rnn", hidden_size=3),
    ], [vi("x", F, [2, 1, 4]), vi("w", F, [1, 3, 5]), vi("r", F, [1, 3, 3])],
        [vi("yh", F, [1, 1, 3])], opset=14, check=False)
    save("lstm_input_forget", [
        helper.make_node("LSTM", ["x", "w", "r"], ["", "yh"], name="coupled", hidden_size=2,
                         input_forget=1),
    ], [vi("x", F, [2, 1, 4]), vi("w", F, [1, 8, 4]), vi("r", F, [1, 8, 2])],
        [vi("yh", F, [1, 1, 2])], opset=14)
    save("rnn_activation", [
        helper.make_node("RNN", ["x", "w", "r"], ["", "yh"], name="swish", hidden_size=3,
                         activations=["Swish"]),
    ], [vi("x", F, [2, 1, 4]), vi("w", F, [1, 3, 4]), vi("r", F, [1, 3, 3])],
        [vi("yh", F, [1, 1, 3])], opset=14)
    save("rnn_lens_type", [
        helper.make_node("RNN", ["x", "w", "r", "", "lens"], ["", "yh"], name="lens64",
                         hidden_size=3),
    ], [vi("x", F, [2, 1, 4]), vi("w", F, [1, 3, 4]), vi("r", F, [1, 3, 3]),
        vi("lens", I64, [1])], [vi("yh", F, [1, 1, 3])], opset=14, check=False)
    save("rnn_long", [
        helper.make_node("RNN", ["x", "w", "r"], ["", "yh"], name="long", hidden_size=2,
                         direction="bidirectional"),
    ], [vi("x", F, [3000, 1, 2]), vi("w", F, [2, 2, 2]), vi("r", F, [2, 2, 2])],
        [vi("yh", F, [2, 1, 2])], opset=14)
    # GridSample: nearest with border padding (one tap: the grid's pixel coordinates
    # clamped, rounded, and gathered from the input's pixel rows), and errors for a 5-D input
    # and a grid of the wrong batch.
    save("grid_sample", [
        helper.make_node("GridSample", ["x", "g"], ["y"], name="warp", mode="nearest",
                         padding_mode="border", align_corners=1),
    ], [vi("x", F, [2, 3, 4, 5]), vi("g", F, [2, 6, 7, 2])], [vi("y", F, [2, 3, 6, 7])],
        opset=16)
    save("grid_sample_3d", [
        helper.make_node("GridSample", ["x", "g"], ["y"], name="warp3d"),
    ], [vi("x", F, [1, 1, 2, 3, 4]), vi("g", F, [1, 2, 2, 2, 3])], [vi("y", F, [1, 1, 2, 2, 2])],
        opset=16, check=False)
    save("grid_sample_batch", [
        helper.make_node("GridSample", ["x", "g"], ["y"], name="mismatch"),
    ], [vi("x", F, [2, 1, 3, 3]), vi("g", F, [1, 2, 2, 2])], [vi("y", F, [2, 1, 2, 2])],
        opset=16, check=False)
    # TopK with ties and -inf (run by topk.test); check_topk.py writes the vocabulary-sized
    # ones.
    save("topk", [
        helper.make_node("TopK", ["x", "k4"], ["big", "big_at"], name="largest"),
        helper.make_node("TopK", ["x", "k3"], ["small", "small_at"], name="smallest", largest=0),
        helper.make_node("TopK", ["x", "k10"], ["rank_big", "rank_big_at"], name="ranked"),
        helper.make_node("TopK", ["x", "k9"], ["rank_small", "rank_small_at"],
                         name="ranked_small", largest=0),
    ], [vi("x", F, [2, 12])],
        [vi("big", F, [2, 4]), vi("big_at", I64, [2, 4]), vi("small", F, [2, 3]),
         vi("small_at", I64, [2, 3]), vi("rank_big", F, [2, 10]),
         vi("rank_big_at", I64, [2, 10]), vi("rank_small", F, [2, 9]),
         vi("rank_small_at", I64, [2, 9])],
        [tensor("k4", np.array([4], np.int64)), tensor("k3", np.array([3], np.int64)),
         tensor("k10", np.array([10], np.int64)), tensor("k9", np.array([9], np.int64))])
    save("topk_int", [
        helper.make_node("TopK", ["x", "k3"], ["small", "small_at"], name="smallest", largest=0),
        helper.make_node("TopK", ["x", "k3"], ["big", "big_at"], name="largest"),
    ], [vi("x", I64, [1, 5])],
        [vi("small", I64, [1, 3]), vi("small_at", I64, [1, 3]), vi("big", I64, [1, 3]),
         vi("big_at", I64, [1, 3])], [tensor("k3", np.array([3], np.int64))])
    # 3-D: a grouped, strided, dilated Conv with depth padding; MaxPool and AveragePool; a
    # strided, grouped ConvTranspose with output padding and a bias.
    save("volumetric", [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv3d", group=2, strides=[2, 1, 1],
                         pads=[1, 0, 1, 1, 0, 1], dilations=[1, 1, 2]),
        helper.make_node("MaxPool", ["c"], ["m"], name="max3d", kernel_shape=[2, 2, 2],
                         strides=[2, 1, 1], pads=[1, 0, 0, 0, 0, 0]),
        helper.make_node("AveragePool", ["c"], ["a"], name="avg3d", kernel_shape=[3, 1, 2],
                         pads=[1, 0, 0, 1, 0, 0]),
        helper.make_node("ConvTranspose", ["m", "wt", "bt"], ["t"], name="deconv3d", group=2,
                         strides=[2, 1, 1], pads=[1, 0, 0, 0, 0, 0], output_padding=[1, 0, 0]),
    ], [vi("x", F, [1, 4, 5, 4, 6])],
        [vi("a", F, [1, 6, 3, 4, 5]), vi("t", F, [1, 2, 5, 4, 6])],
        [tensor("w", f32(6, 2, 3, 1, 2)), tensor("wt", f32(6, 1, 3, 2, 2)), tensor("bt", f32(2))])

    # Atan, Asin and Acos in f32 and f64 (composed from plait's arithmetic).
    D = TensorProto.DOUBLE
    save("inverse_trig", [
        helper.make_node("Atan", ["a32"], ["atan32"], name="atan32"),
        helper.make_node("Asin", ["u32"], ["asin32"], name="asin32"),
        helper.make_node("Acos", ["u32"], ["acos32"], name="acos32"),
        helper.make_node("Atan", ["a64"], ["atan64"], name="atan64"),
        helper.make_node("Asin", ["u64"], ["asin64"], name="asin64"),
        helper.make_node("Acos", ["u64"], ["acos64"], name="acos64"),
    ], [vi("a32", F, [4096]), vi("u32", F, [4096]), vi("a64", D, [4096]), vi("u64", D, [4096])],
        [vi(n, F if n.endswith("32") else D, [4096])
         for n in ("atan32", "asin32", "acos32", "atan64", "asin64", "acos64")])

    # GatherND with batch_dims 1 (tuples of 1 into [2, 3, 4]) and 2 (tuples of 2 into
    # [2, 3, 4, 5]), indices negative included, given at run time.
    save("gathernd_batch", [
        helper.make_node("GatherND", ["d1", "i1"], ["g1"], name="batch1", batch_dims=1),
        helper.make_node("GatherND", ["d2", "i2"], ["g2"], name="batch2", batch_dims=2),
    ], [vi("d1", F, [2, 3, 4]), vi("i1", I64, [2, 2, 1]), vi("d2", F, [2, 3, 4, 5]),
        vi("i2", I64, [2, 3, 2, 2])],
        [vi("g1", F, [2, 2, 4]), vi("g2", F, [2, 3, 2])])
    save("gathernd_batch_mismatch", [
        helper.make_node("GatherND", ["d", "i"], ["g"], name="mismatch", batch_dims=1),
    ], [vi("d", F, [2, 3]), vi("i", I64, [3, 1])], [vi("g", F, [3])], check=False)

    # ReverseSequence, time first ([5, 3, 2, 2]) and batch first ([3, 5, 2]), lengths at run time.
    save("reverse_sequence", [
        helper.make_node("ReverseSequence", ["x", "lens"], ["y"], name="time_first",
                         time_axis=0, batch_axis=1),
        helper.make_node("ReverseSequence", ["z", "lens"], ["w"], name="batch_first",
                         time_axis=1, batch_axis=0),
    ], [vi("x", F, [5, 3, 2, 2]), vi("z", F, [3, 5, 2]), vi("lens", I64, [3])],
        [vi("y", F, [5, 3, 2, 2]), vi("w", F, [3, 5, 2])])
    save("reverse_sequence_axes", [
        helper.make_node("ReverseSequence", ["x", "lens"], ["y"], name="same_axes",
                         time_axis=1, batch_axis=1),
    ], [vi("x", F, [2, 2]), vi("lens", I64, [2])], [vi("y", F, [2, 2])], check=False)

    # DFT and STFT (opset 17): a real DFT padded to 12 along the middle axis of [2, 10, 3, 1],
    # onesided and truncated to 8, a complex inverse in f64, an STFT with a window; and a
    # spectrum's power as a loss over a learned projection, to train.
    D = TensorProto.DOUBLE
    save("spectral", [
        const("twelve", np.array(12, np.int64)),
        const("eight", np.array(8, np.int64)),
        helper.make_node("DFT", ["r", "twelve"], ["padded"], name="padded", axis=1),
        helper.make_node("DFT", ["r", "eight"], ["half"], name="half", axis=1, onesided=1),
        helper.make_node("DFT", ["z"], ["inv"], name="inv", axis=-2, inverse=1),
        const("step", np.array(3, np.int64)),
        helper.make_node("STFT", ["sig", "step", "win"], ["spec"], name="spec", onesided=0),
    ], [vi("r", F, [2, 10, 3, 1]), vi("z", D, [3, 7, 2]), vi("sig", F, [2, 20, 1]),
        vi("win", F, [8])],
        [vi("padded", F, [2, 12, 3, 2]), vi("half", F, [2, 5, 3, 2]), vi("inv", D, [3, 7, 2]),
         vi("spec", F, [2, 5, 8, 2])], opset=17)
    save("spectral_train", [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"),
        const("last", np.array([-1], np.int64)),
        helper.make_node("Unsqueeze", ["h", "last"], ["h3"], name="as_real"),
        helper.make_node("DFT", ["h3"], ["s"], name="spectrum", axis=1, onesided=1),
        helper.make_node("Mul", ["s", "s"], ["p"], name="power"),
        helper.make_node("ReduceMean", ["p"], ["loss"], name="loss", keepdims=0),
    ], [vi("x", F, [4, 16])], [vi("loss", F, [])],
        [tensor("w", (np.random.default_rng(2).standard_normal((16, 16)) * 0.25).astype(
            np.float32))], opset=17)

    save("dft_last_axis", [helper.make_node("DFT", ["r"], ["y"], name="last", axis=2)],
         [vi("r", F, [2, 4, 1])], [vi("y", F, [2, 4, 2])], opset=17, check=False)
    save("stft_window_length", [
        const("step", np.array(2, np.int64)),
        const("length", np.array(6, np.int64)),
        helper.make_node("STFT", ["sig", "step", "win", "length"], ["y"], name="mismatch"),
    ], [vi("sig", F, [1, 16, 1]), vi("win", F, [4])], [vi("y", F, [1, 6, 4, 2])], opset=17,
        check=False)

    save("stft_too_many_frames", [
        const("step", np.array(1, np.int64)),
        const("length", np.array(1000, np.int64)),
        helper.make_node("STFT", ["sig", "step", "", "length"], ["y"], name="dense"),
    ], [vi("sig", F, [1, 100000, 1])], [vi("y", F, [1, 99001, 501, 2])], opset=17, check=False)

    # MelWeightMatrix (40 bands of a 512-point DFT at 16 kHz, 20 Hz to 8 kHz), applied to an
    # STFT's power as a log-mel front end would; and band edges above the Nyquist frequency.
    save("mel", [
        const("mels", np.array(40, np.int64)),
        const("dft", np.array(512, np.int64)),
        const("rate", np.array(16000, np.int64)),
        const("low", np.array(20.0, np.float32)),
        const("high", np.array(8000.0, np.float32)),
        helper.make_node("MelWeightMatrix", ["mels", "dft", "rate", "low", "high"], ["m"],
                         name="filters"),
        helper.make_node("MatMul", ["power", "m"], ["melspec"], name="apply"),
    ], [vi("power", F, [3, 257])], [vi("m", F, [257, 40]), vi("melspec", F, [3, 40])],
        opset=17)
    save("mel_nyquist", [
        const("mels", np.array(4, np.int64)),
        const("dft", np.array(64, np.int64)),
        const("rate", np.array(8000, np.int64)),
        const("low", np.array(0.0, np.float32)),
        const("high", np.array(20000.0, np.float32)),
        helper.make_node("MelWeightMatrix", ["mels", "dft", "rate", "low", "high"], ["m"],
                         name="beyond"),
    ], [], [vi("m", F, [33, 4])], opset=17, check=False)

    # Training-mode BatchNormalization (opset 15) whose running statistics are initializers
    # (kept as buffers when training), the loss the mean square of its output; and the same
    # as torch.onnx.export writes it at opset 13 (BatchNormalization-9: no training_mode,
    # five outputs).
    bn_inits = [tensor("bn.scale", 1 + 0.1 * f32(3)), tensor("bn.bias", 0.1 * f32(3)),
                tensor("bn.running_mean", 0.1 * f32(3)),
                tensor("bn.running_var", 1 + np.abs(0.1 * f32(3)))]
    square_mean = [helper.make_node("Mul", ["n", "n"], ["sq"], name="square"),
                   helper.make_node("ReduceMean", ["sq"], ["loss"], name="mean", keepdims=0)]
    save("batchnorm_train", [
        helper.make_node("BatchNormalization",
                         ["x", "bn.scale", "bn.bias", "bn.running_mean", "bn.running_var"],
                         ["n", "new_mean", "new_var"], name="bn", training_mode=1,
                         momentum=0.8),
    ] + square_mean, [vi("x", F, [4, 3, 2, 2])], [vi("loss", F, [])], bn_inits, opset=15)
    save("batchnorm_train_opset13", [
        helper.make_node("BatchNormalization",
                         ["x", "bn.scale", "bn.bias", "bn.running_mean", "bn.running_var"],
                         ["n", "new_mean", "new_var", "saved_mean", "saved_var"], name="bn",
                         momentum=0.8),
    ] + square_mean, [vi("x", F, [4, 3, 2, 2])], [vi("loss", F, [])], bn_inits, opset=13)

    # Two training-mode BatchNormalizations sharing running statistics: two updates of one
    # buffer, refused.
    save("batchnorm_shared", [
        helper.make_node("BatchNormalization",
                         ["x", "bn.scale", "bn.bias", "bn.running_mean", "bn.running_var"],
                         ["h", "m1", "v1"], name="bn1", training_mode=1),
        helper.make_node("BatchNormalization",
                         ["h", "bn.scale", "bn.bias", "bn.running_mean", "bn.running_var"],
                         ["n", "m2", "v2"], name="bn2", training_mode=1),
    ] + square_mean, [vi("x", F, [4, 3, 2, 2])], [vi("loss", F, [])], bn_inits, opset=15)

    # Training-mode BatchNormalization over one value per channel ([1, 3]): no batch variance.
    save("batchnorm_one_value", [
        helper.make_node("BatchNormalization",
                         ["x", "bn.scale", "bn.bias", "bn.running_mean", "bn.running_var"],
                         ["n", "new_mean", "new_var"], name="bn", training_mode=1),
    ] + square_mean, [vi("x", F, [1, 3])], [vi("loss", F, [])], bn_inits, opset=15)

    with open(os.path.join(OUT, "mlp.onnx"), "rb") as f:
        whole = f.read()
    with open(os.path.join(OUT, "truncated.onnx"), "wb") as f:
        f.write(whole[: len(whole) // 2])
    with open(os.path.join(OUT, "garbage.onnx"), "wb") as f:
        f.write(b"this is not an onnx model\n" * 4)


if __name__ == "__main__":
    main()
