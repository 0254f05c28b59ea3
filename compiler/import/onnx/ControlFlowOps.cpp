// If whose condition is known at import time: the branch it takes is imported in place of the
// node. Exports of modules that branch on shapes (torch.jit.script's `if x.size(0) > 1`) fold
// such conditions; plait plans one static program, so a condition computed at run time is
// refused in one line that says how to bind it (--const-input). Loop and Scan stay
// unsupported.
#include "compiler/import/onnx/Importer.h"

#include "onnx/onnx_pb.h"

using namespace mlir;

namespace plait::onnx_import {
namespace {

LogicalResult importIf(NodeContext &ctx) {
  // A condition computed at run time: the error says how to bind it (--const-input).
  const HostTensor *cond = ctx.requireConstInput(0, "cond");
  if (!cond)
    return failure();
  if (cond->numElements() != 1)
    return ctx.error("cond must hold one value, it holds " + llvm::Twine(cond->numElements()));
  const bool taken = cond->getInt(0) != 0;
  const char *name = taken ? "then_branch" : "else_branch";
  const onnx::AttributeProto *branch = ctx.rawAttr(name);
  if (!branch || !branch->has_g())
    return ctx.error(llvm::Twine("missing attribute ") + name);
  const onnx::GraphProto &graph = branch->g();
  if (graph.output_size() != int(ctx.numOutputs()))
    return ctx.error(llvm::Twine(name) + " has " + llvm::Twine(graph.output_size()) +
                     " outputs, the If " + llvm::Twine(ctx.numOutputs()));
  if (failed(ctx.importSubgraph(graph)))
    return failure();
  for (unsigned i = 0; i < ctx.numOutputs(); ++i)
    if (failed(ctx.forwardValue(i, graph.output(int(i)).name())))
      return failure();
  return success();
}

} // namespace

void registerControlFlowOps(OpImporterMap &map) { map["If"] = importIf; }

} // namespace plait::onnx_import
