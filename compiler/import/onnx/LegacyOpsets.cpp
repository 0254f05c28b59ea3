// Lifting models of opsets below 13 to opset 13 (LegacyOpsets.h), and the importer of the
// helper node a lift inserts, plait.legacy's AlignTrailing (the other, BatchedScan, an opset-8
// Scan, is imported with Scan in ControlFlowOps.cpp).
//
// Each rule below is the difference between an op's old definition and its opset-13 one, as
// ONNX's operator changelog states it. Versions that only widened the types, or added an
// attribute whose default keeps the old behaviour, need no rewrite (kSameAsOpset13). ONNX's
// version converter (--upgrade-opset) covers more ops, but lifts some wrongly (an opset-6
// PRelu's per-channel slope); these rules are plait's own and are checked against the ONNX
// test data of the opset-6 models PyTorch exported (pytorch-converted, pytorch-operator).
#include "compiler/import/onnx/LegacyOpsets.h"

#include <set>

#include "compiler/import/onnx/Importer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/defs/schema.h"

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// Op versions whose meaning is their opset-13 successor's for every model valid at them (once
/// a version-1 op's `consumed_inputs`, an optimisation hint, is dropped).
const llvm::StringMap<std::set<int>> &sameAsOpset13() {
  // clang-format off
  static const llvm::StringMap<std::set<int>> table = {
      // Unary math and activations: version 6 dropped consumed_inputs, 13 added bfloat16.
      {"Abs", {1, 6}}, {"Neg", {1, 6}}, {"Relu", {1, 6}}, {"Sigmoid", {1, 6}},
      {"Tanh", {1, 6}}, {"Exp", {1, 6}}, {"Log", {1, 6}}, {"Sqrt", {1, 6}},
      {"Floor", {1, 6}}, {"Ceil", {1, 6}}, {"Reciprocal", {1, 6}}, {"Elu", {1}},
      {"LeakyRelu", {1}}, {"Selu", {1}}, {"HardSigmoid", {1}}, {"Not", {1}},
      {"Sign", {9}}, {"Erf", {9}}, {"IsNaN", {9}}, {"NonZero", {9}}, {"Mod", {10}},
      // Binary ops since version 7 broadcast as numpy does (later versions added types).
      {"Add", {7}}, {"Sub", {7}}, {"Mul", {7}}, {"Div", {7}}, {"Pow", {7, 12}},
      {"And", {7}}, {"Or", {7}}, {"Xor", {7}}, {"Equal", {7, 11}}, {"Greater", {7, 9}},
      {"Less", {7, 9}}, {"PRelu", {7}},
      // Variadic: version 6 needs equal shapes, 8 broadcasts (a superset).
      {"Max", {1, 6, 8, 12}}, {"Min", {1, 6, 8, 12}}, {"Sum", {1, 6, 8}}, {"Mean", {1, 6, 8}},
      // Tensor ops: types widened, negative axes and indices defined where they were not.
      {"Cast", {6, 9}}, {"Concat", {4, 11}}, {"Constant", {1, 9, 11, 12}},
      {"Flatten", {1, 9, 11}}, {"Gather", {1, 11}}, {"Identity", {1}}, {"MatMul", {1, 9}},
      {"Reshape", {5}}, {"Transpose", {1}}, {"Tile", {6}}, {"Clip", {11, 12}},
      {"Expand", {8}}, {"Where", {9}}, {"Shape", {1}}, {"Size", {1}}, {"Pad", {11}},
      {"Slice", {10, 11}}, {"TopK", {10, 11}}, {"DepthToSpace", {1, 11}},
      {"SpaceToDepth", {1}}, {"OneHot", {9}}, {"GatherElements", {11}}, {"GatherND", {11, 12}},
      {"ScatterElements", {11}}, {"ScatterND", {11}}, {"Resize", {11}},
      // Reductions other than ReduceSum keep their axes attribute at 13.
      {"ReduceMean", {1, 11}}, {"ReduceMax", {1, 11, 12}}, {"ReduceMin", {1, 11, 12}},
      {"ReduceProd", {1, 11}}, {"ReduceL1", {1, 11}}, {"ReduceL2", {1, 11}},
      {"ReduceLogSum", {1, 11}}, {"ReduceLogSumExp", {1, 11}}, {"ReduceSumSquare", {1, 11}},
      {"ArgMax", {1, 11, 12}}, {"ArgMin", {1, 11, 12}},
      // Convolution and pooling: later versions added attributes (dilations, ceil_mode,
      // storage_order, count_include_pad) whose defaults are the old behaviour.
      {"Conv", {1}}, {"ConvTranspose", {1}}, {"MaxPool", {1, 8, 10, 11}},
      {"AveragePool", {1, 7, 10}}, {"Gemm", {7, 9, 11}}, {"LRN", {1}},
      {"InstanceNormalization", {1}}, {"MeanVarianceNormalization", {9}},
      {"QuantizeLinear", {10}}, {"DequantizeLinear", {10}},
      // Control flow (their subgraphs are lifted node by node): If-13 and Loop-13 added
      // sequence types, Loop-11 reworded Loop-1, Scan-11 allowed negative axes.
      {"If", {1, 11}}, {"Loop", {1, 11}}, {"Scan", {9}},
  };
  // clang-format on
  return table;
}

/// Rewrites a model's nodes, those inside subgraphs (If branches, Loop and Scan bodies)
/// included; keeps the names in use so that new values get fresh ones.
class Lifter {
public:
  Lifter(onnx::ModelProto &model, int64_t opset, OpsetLift &lift)
      : model_(model), opset_(opset), lift_(lift) {
    noteGraph(model.graph());
  }

  std::string run() { return liftGraph(*model_.mutable_graph()); }

private:
  void noteGraph(const onnx::GraphProto &g) {
    for (const auto &v : g.input())
      noteType(v);
    for (const auto &v : g.output())
      noteType(v);
    for (const auto &v : g.value_info())
      noteType(v);
    for (const auto &t : g.initializer()) {
      names_.insert(t.name());
      elemType_[t.name()] = t.data_type();
    }
    for (const auto &n : g.node()) {
      for (const std::string &out : n.output())
        names_.insert(out);
      for (const auto &a : n.attribute()) {
        if (a.has_g())
          noteGraph(a.g());
        for (const auto &sub : a.graphs())
          noteGraph(sub);
      }
    }
  }

  /// Lifts `g`'s nodes in place: a node's subgraphs first, then the node, whose replacement
  /// (and any nodes a rule adds) goes where it stood.
  std::string liftGraph(onnx::GraphProto &g) {
    onnx::GraphProto *outer = graph_;
    graph_ = &g;
    auto restore = llvm::make_scope_exit([&] { graph_ = outer; });
    google::protobuf::RepeatedPtrField<onnx::NodeProto> old;
    old.Swap(g.mutable_node());
    for (int i = 0; i < old.size(); ++i) {
      onnx::NodeProto node = std::move(*old.Mutable(i));
      // Errors and locations name nodes as the importer does; give the unnamed ones the name
      // their index in the user's graph gives them, before helper nodes shift the indices.
      if (node.name().empty())
        node.set_name(node.op_type() + "_" + std::to_string(i));
      for (auto &a : *node.mutable_attribute()) {
        if (a.has_g())
          if (std::string error = liftGraph(*a.mutable_g()); !error.empty())
            return error;
        for (auto &sub : *a.mutable_graphs())
          if (std::string error = liftGraph(sub); !error.empty())
            return error;
      }
      if (std::string error = liftNode(node); !error.empty())
        return error;
    }
    return "";
  }

  void noteType(const onnx::ValueInfoProto &v) {
    names_.insert(v.name());
    if (v.type().has_tensor_type())
      elemType_[v.name()] = v.type().tensor_type().elem_type();
  }

  std::string fresh(const std::string &base) {
    std::string name = base;
    for (int k = 1; !names_.insert(name).second; ++k)
      name = base + "_" + std::to_string(k);
    return name;
  }

  /// Appends `node` to the graph being lifted (moved: a Constant's tensor is not copied).
  const onnx::NodeProto &emit(onnx::NodeProto node) {
    onnx::NodeProto *n = graph_->add_node();
    *n = std::move(node);
    return *n;
  }

  /// A Constant node (named after `owner`) holding `tensor`; returns its output's name.
  std::string constant(const onnx::NodeProto &owner, const std::string &role,
                       onnx::TensorProto tensor) {
    onnx::NodeProto c;
    c.set_op_type("Constant");
    c.set_name(owner.name() + "/" + role);
    std::string out = fresh(owner.name() + "_" + role);
    c.add_output(out);
    onnx::AttributeProto *value = c.add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    tensor.set_name(out);
    *value->mutable_t() = std::move(tensor);
    emit(std::move(c));
    return out;
  }
  std::string ints(const onnx::NodeProto &owner, const std::string &role,
                   llvm::ArrayRef<int64_t> values, bool scalar = false) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::INT64);
    if (!scalar)
      t.add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values)
      t.add_int64_data(v);
    return constant(owner, role, t);
  }
  /// A scalar of the element type of value `like` (float when it is not known: the importers
  /// read such bounds and pad values as numbers, whatever their type).
  std::string scalarLike(const onnx::NodeProto &owner, const std::string &role, double v,
                         const std::string &like) {
    onnx::TensorProto t;
    auto it = elemType_.find(like);
    int type = it == elemType_.end() ? onnx::TensorProto::FLOAT : it->second;
    if (type == onnx::TensorProto::DOUBLE) {
      t.set_data_type(type);
      t.add_double_data(v);
    } else {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_float_data(static_cast<float>(v));
    }
    return constant(owner, role, t);
  }

  static const onnx::AttributeProto *attr(const onnx::NodeProto &n, llvm::StringRef name) {
    for (const auto &a : n.attribute())
      if (a.name() == name)
        return &a;
    return nullptr;
  }
  static int64_t intAttr(const onnx::NodeProto &n, llvm::StringRef name, int64_t dflt) {
    const auto *a = attr(n, name);
    return a ? a->i() : dflt;
  }
  static void dropAttrs(onnx::NodeProto &n, std::initializer_list<llvm::StringRef> names) {
    auto *attrs = n.mutable_attribute();
    for (int i = attrs->size() - 1; i >= 0; --i)
      if (llvm::is_contained(names, llvm::StringRef(attrs->Get(i).name())))
        attrs->DeleteSubrange(i, 1);
  }
  /// Moves the ints attribute `name` to input `index` (as a Constant); inputs before it that
  /// are missing become empty (omitted optional inputs). Absent attribute: nothing.
  void attrToInput(onnx::NodeProto &n, llvm::StringRef name, int index) {
    const auto *a = attr(n, name);
    if (!a)
      return;
    std::vector<int64_t> values(a->ints().begin(), a->ints().end());
    std::string c = ints(n, name.str(), values);
    while (n.input_size() < index)
      n.add_input("");
    if (n.input_size() == index)
      n.add_input(c);
    else
      n.set_input(index, c);
    dropAttrs(n, {name});
  }
  static void setIntAttr(onnx::NodeProto &n, const std::string &name, int64_t v) {
    dropAttrs(n, {name});
    onnx::AttributeProto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void setStringAttr(onnx::NodeProto &n, const std::string &name, const std::string &v) {
    dropAttrs(n, {name});
    onnx::AttributeProto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  /// B aligned with A's dimensions from `axis` on (plait.legacy's AlignTrailing); returns the
  /// name of the aligned B.
  std::string alignTrailing(const onnx::NodeProto &owner, const std::string &b,
                            const std::string &a, int64_t axis, bool strict) {
    onnx::NodeProto n;
    n.set_op_type("AlignTrailing");
    n.set_domain(kLegacyDomain);
    n.set_name(owner.name());
    n.add_input(b);
    n.add_input(a);
    n.add_output(fresh(b + "_aligned"));
    setIntAttr(n, "axis", axis);
    setIntAttr(n, "strict", strict);
    setStringAttr(n, "lifted_from", owner.op_type());
    return emit(std::move(n)).output(0);
  }

  std::string unsupported(const onnx::NodeProto &n, int then, const std::string &why) {
    return "node '" + n.name() + "' (" + n.op_type() + ") is defined there by version " +
           std::to_string(then) + ", " + why;
  }

  std::string liftNode(onnx::NodeProto &n) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      emit(std::move(n)); // the training domain has its own version
      return "";
    }
    const onnx::OpSchema *then = onnx::OpSchemaRegistry::Schema(n.op_type(), int(opset_));
    const onnx::OpSchema *now = onnx::OpSchemaRegistry::Schema(n.op_type(), 13);
    if (!then) // the checker accepted the model, so this is an op plait has no rule for
      return unsupported(n, 0, "which plait does not lift");
    const int v = then->SinceVersion();
    // Upsample and Scatter are deprecated at 13 (their schemas there are their last ones).
    const bool renamed = n.op_type() == "Upsample" || n.op_type() == "Scatter";
    if (now && now->SinceVersion() == v && !renamed) {
      emit(std::move(n));
      return "";
    }
    const std::string op = n.op_type();
    const std::string key = op + "-" + std::to_string(v);
    dropAttrs(n, {"consumed_inputs"});
    auto same = sameAsOpset13().find(op);
    if (same != sameAsOpset13().end() && same->second.count(v)) {
      ++lift_.kept[key];
      emit(std::move(n));
      return "";
    }
    ++lift_.rewritten[key];
    ++lift_.nodes;
    static const std::set<std::string> legacyBroadcast = {
        "Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"};
    if (legacyBroadcast.count(op) && v < 7) {
      // broadcast=1: B's dimensions match A's from `axis` on (the trailing ones when no axis
      // is given, which is numpy's alignment); broadcast=0: equal shapes.
      if (intAttr(n, "broadcast", 0) != 0 && attr(n, "axis") && n.input_size() == 2)
        n.set_input(1, alignTrailing(n, n.input(1), n.input(0), intAttr(n, "axis", 0),
                                     /*strict=*/true));
      dropAttrs(n, {"broadcast", "axis"});
      emit(std::move(n));
      return "";
    }
    if (op == "Gemm" && v < 7) { // C's unidirectional broadcast is what broadcast=1 allowed
      dropAttrs(n, {"broadcast"});
      emit(std::move(n));
      return "";
    }
    if (op == "PRelu" && v < 7) {
      // The slope is per channel (dimension 1), as PyTorch exported it: [C] meets [N, C, ...]
      // as [C, 1, ...], where numpy's rule would align it with the last dimension.
      n.set_input(1, alignTrailing(n, n.input(1), n.input(0), 1, /*strict=*/false));
      emit(std::move(n));
      return "";
    }
    if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && v < 13) {
      // Before 13, the input is coerced to 2-D at `axis` ([prod(d < axis), prod(d >= axis)])
      // and normalised along the second dimension.
      int64_t axis = intAttr(n, "axis", 1);
      if (axis == -1) {
        setIntAttr(n, "axis", -1);
        emit(std::move(n));
        return "";
      }
      std::string x = n.input(0), y = n.output(0);
      onnx::NodeProto flat;
      flat.set_op_type("Flatten");
      flat.set_name(n.name() + "/flatten");
      flat.add_input(x);
      flat.add_output(fresh(y + "_2d"));
      setIntAttr(flat, "axis", axis);
      emit(flat);
      onnx::NodeProto shape;
      shape.set_op_type("Shape");
      shape.set_name(n.name() + "/shape");
      shape.add_input(x);
      shape.add_output(fresh(x + "_shape"));
      emit(shape);
      n.set_input(0, flat.output(0));
      n.set_output(0, fresh(y + "_2d_out"));
      setIntAttr(n, "axis", 1);
      const onnx::NodeProto &rows = emit(std::move(n));
      onnx::NodeProto back;
      back.set_op_type("Reshape");
      back.set_name(rows.name() + "/reshape");
      back.add_input(rows.output(0));
      back.add_input(shape.output(0));
      back.add_output(y);
      emit(std::move(back));
      return "";
    }
    if (op == "BatchNormalization" && v < 9) {
      if (intAttr(n, "spatial", 1) != 1)
        return unsupported(n, v, "whose spatial=0 (statistics per element) plait does not lift");
      // is_test=0 is training mode, which version 9 expresses by asking for the running
      // statistics' outputs.
      const bool training = intAttr(n, "is_test", 0) == 0;
      if (training && (n.output_size() < 3 || n.output(1).empty() || n.output(2).empty()))
        return unsupported(n, v,
                           "in training mode (is_test=0) without its running statistics' outputs, "
                           "which plait does not lift");
      if (!training)
        while (n.output_size() > 1)
          n.mutable_output()->RemoveLast();
      dropAttrs(n, {"is_test", "spatial"});
      emit(std::move(n));
      return "";
    }
    if (op == "Dropout" && v < 12) {
      // The ratio became an input; before 7, is_test=0 (the default) meant training mode.
      if (v < 10 && n.output_size() > 1 && !n.output(1).empty())
        return unsupported(n, v,
                           "whose mask output (of the data's type, a bool since version "
                           "10) plait does not lift");
      const auto *ratio = attr(n, "ratio");
      onnx::TensorProto r;
      r.set_data_type(onnx::TensorProto::FLOAT);
      r.add_float_data(ratio ? ratio->f() : 0.5f);
      const bool training = v < 7 && intAttr(n, "is_test", 0) == 0;
      dropAttrs(n, {"ratio", "is_test"});
      n.add_input(constant(n, "ratio", r));
      if (training) {
        onnx::TensorProto t;
        t.set_data_type(onnx::TensorProto::BOOL);
        t.add_int32_data(1);
        n.add_input(constant(n, "training_mode", t));
      }
      emit(std::move(n));
      return "";
    }
    if (op == "Clip" && v < 11) {
      // min and max became inputs (absent: unbounded).
      const auto *lo = attr(n, "min");
      const auto *hi = attr(n, "max");
      std::string x = n.input(0);
      std::string loName = lo ? scalarLike(n, "min", lo->f(), x) : "";
      std::string hiName = hi ? scalarLike(n, "max", hi->f(), x) : "";
      dropAttrs(n, {"min", "max"});
      if (lo || hi)
        n.add_input(loName);
      if (hi)
        n.add_input(hiName);
      emit(std::move(n));
      return "";
    }
    if (op == "Pad" && v < 11) {
      // pads (version 1: paddings) and the constant value became inputs.
      const auto *pads = attr(n, v == 1 ? "paddings" : "pads");
      if (!pads)
        return unsupported(n, v, "without its pads attribute");
      std::vector<int64_t> values(pads->ints().begin(), pads->ints().end());
      const auto *value = attr(n, "value");
      std::string padsName = ints(n, "pads", values);
      std::string valueName =
          value && value->f() != 0.0f ? scalarLike(n, "value", value->f(), n.input(0)) : "";
      dropAttrs(n, {"pads", "paddings", "value"});
      n.add_input(padsName);
      if (!valueName.empty())
        n.add_input(valueName);
      emit(std::move(n));
      return "";
    }
    if (op == "Reshape" && v < 5) {
      attrToInput(n, "shape", 1);
      emit(std::move(n));
      return "";
    }
    if (op == "Split" && v < 13) {
      attrToInput(n, "split", 1);
      emit(std::move(n));
      return "";
    }
    if ((op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") && v < 13) {
      attrToInput(n, "axes", 1);
      emit(std::move(n));
      return "";
    }
    if (op == "Slice" && v < 10) {
      const bool hasAxes = attr(n, "axes") != nullptr;
      attrToInput(n, "starts", 1);
      attrToInput(n, "ends", 2);
      if (hasAxes)
        attrToInput(n, "axes", 3);
      emit(std::move(n));
      return "";
    }
    if (op == "TopK" && v < 10) {
      const auto *k = attr(n, "k");
      if (!k)
        return unsupported(n, v, "without its k attribute");
      n.add_input(ints(n, "k", {k->i()}));
      dropAttrs(n, {"k"});
      emit(std::move(n));
      return "";
    }
    if (op == "Concat" && v < 4) {
      if (!attr(n, "axis"))
        setIntAttr(n, "axis", 1);
      emit(std::move(n));
      return "";
    }
    if (op == "Cast" && v < 6) {
      const auto *to = attr(n, "to");
      onnx::TensorProto_DataType type;
      if (!to || !onnx::TensorProto_DataType_Parse(to->s(), &type))
        return unsupported(n, v, "whose 'to' names no ONNX type");
      setIntAttr(n, "to", type);
      emit(std::move(n));
      return "";
    }
    if (op == "Scatter") { // renamed ScatterElements at 11, the same op
      n.set_op_type("ScatterElements");
      emit(std::move(n));
      return "";
    }
    if (op == "Upsample") {
      // Upsample is Resize on the input grid (asymmetric), nearest rounding down (its
      // nearest copies each pixel `scale` times); version 7 gives the scales as an attribute.
      std::string mode;
      if (const auto *m = attr(n, "mode"))
        mode = m->s();
      if (mode.empty())
        mode = "nearest";
      std::string scales;
      if (v < 9) {
        const auto *s = attr(n, "scales");
        if (!s)
          return unsupported(n, v, "without its scales attribute");
        onnx::TensorProto t;
        t.set_data_type(onnx::TensorProto::FLOAT);
        t.add_dims(s->floats_size());
        for (float f : s->floats())
          t.add_float_data(f);
        scales = constant(n, "scales", t);
      } else {
        if (n.input_size() < 2)
          return unsupported(n, v, "without its scales input");
        scales = n.input(1);
      }
      n.set_op_type("Resize");
      while (n.input_size() > 1)
        n.mutable_input()->RemoveLast();
      n.add_input("");
      n.add_input(scales);
      dropAttrs(n, {"scales", "mode", "width_scale", "height_scale"});
      setStringAttr(n, "mode", mode);
      setStringAttr(n, "coordinate_transformation_mode", "asymmetric");
      if (mode == "nearest")
        setStringAttr(n, "nearest_mode", "floor");
      emit(std::move(n));
      return "";
    }
    // Scan-8 scans a batch of sequences (axis 0 the batch, 1 the sequence).
    if (op == "Scan" && v < 9) {
      n.set_domain(kLegacyDomain);
      n.set_op_type("BatchedScan");
      setStringAttr(n, "lifted_from", op);
      emit(std::move(n));
      return "";
    }
    return unsupported(n, v,
                       "but plait imports version " +
                           std::to_string(now ? now->SinceVersion() : 0) +
                           " (the one of opset 13) and has no rule to lift it; convert the model "
                           "with onnx.version_converter, or pass --upgrade-opset");
  }

  onnx::ModelProto &model_;
  onnx::GraphProto *graph_ = nullptr; // the graph whose nodes liftGraph is rewriting
  int64_t opset_;
  OpsetLift &lift_;
  std::set<std::string> names_;
  std::map<std::string, int> elemType_;
};

/// plait.legacy's AlignTrailing(B, A){axis, strict}: B with ones appended to its shape so that
/// its dimensions meet A's from `axis` on under numpy's rule (B itself when they already do).
/// Strict (the legacy broadcast): B must fit within A's dimensions from `axis` on.
LogicalResult importAlignTrailing(NodeContext &ctx) {
  RankedTensorType b = ctx.inputType(0), a = ctx.inputType(1);
  if (!b || !a)
    return failure();
  int64_t axis = ctx.intAttr("axis", 0);
  if (axis < 0)
    axis += a.getRank();
  int64_t ones = a.getRank() - axis - b.getRank();
  if (axis < 0 || axis >= a.getRank())
    return ctx.error("broadcast axis " + llvm::Twine(ctx.intAttr("axis", 0)) +
                     " is out of range for rank " + llvm::Twine(a.getRank()));
  if (ones < 0 && ctx.intAttr("strict", 0) != 0)
    return ctx.error("B of rank " + llvm::Twine(b.getRank()) + " does not fit A's " +
                     llvm::Twine(a.getRank() - axis) + " dimensions from broadcast axis " +
                     llvm::Twine(axis));
  if (ones <= 0)
    return ctx.forwardInput(0, 0);
  llvm::SmallVector<int64_t> shape(b.getShape());
  shape.append(ones, 1);
  if (const HostTensor *folded = ctx.foldedInput(0)) {
    ctx.setOutput(0, folded->reshaped(shape));
    return success();
  }
  Value x = ctx.input(0);
  return x ? ctx.setResult(ctx.reshape(x, shape)) : failure();
}

} // namespace

std::string liftLegacyOpset(onnx::ModelProto &model, int64_t opset, OpsetLift &lift) {
  lift.from = opset;
  Lifter lifter(model, opset, lift);
  if (std::string error = lifter.run(); !error.empty())
    return error;
  bool defaultDomain = false, legacy = false;
  for (auto &import : *model.mutable_opset_import()) {
    if (import.domain().empty() || import.domain() == "ai.onnx") {
      import.set_version(13);
      defaultDomain = true;
    }
    legacy |= import.domain() == kLegacyDomain;
  }
  if (!defaultDomain) {
    auto *import = model.add_opset_import();
    import->set_version(13);
  }
  if (!legacy) {
    auto *import = model.add_opset_import();
    import->set_domain(kLegacyDomain);
    import->set_version(1);
  }
  // Opset 13 is IR version 7's; an older IR version made every initializer a graph input too,
  // which version 7 still allows.
  if (model.ir_version() < 7)
    model.set_ir_version(7);
  return "";
}

void registerLegacyOps(OpImporterMap &map) {
  map[qualifiedOpType(kLegacyDomain, "AlignTrailing")] = importAlignTrailing;
}

} // namespace plait::onnx_import
