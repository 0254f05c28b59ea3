// Models of ONNX opsets below 13, lifted by plait itself: each node whose definition changed
// between the model's opset and 13 is rewritten into its opset-13 form (an attribute that
// became an input is given as a Constant, a coerced-2-D softmax becomes Flatten + softmax +
// Reshape, the legacy broadcast is made explicit, ...). Internal to compiler/import/onnx.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "onnx/onnx_pb.h"

namespace plait::onnx_import {

/// The domain of the helper nodes a lift inserts (never accepted from a user's model).
inline constexpr const char *kLegacyDomain = "plait.legacy";

/// What liftLegacyOpset did, for the module's `plait.onnx_opset` (--report, --explain).
struct OpsetLift {
  int64_t from = 0;
  int64_t nodes = 0; // nodes rewritten
  /// "Softmax-1" -> count, per op and the version it was defined by.
  std::map<std::string, int64_t> rewritten;
  /// The same for nodes whose version means what opset 13's does (read as they are).
  std::map<std::string, int64_t> kept;
};

/// Rewrites `model` (a default-domain opset `opset` below 13, already accepted by ONNX's
/// checker at that opset) into an opset-13 model with the same meaning. Returns "" on success,
/// or why the first node it cannot lift is not lifted ("node 'NAME' (OpType) is defined there
/// by version V, ..."); `model` is then unspecified.
std::string liftLegacyOpset(onnx::ModelProto &model, int64_t opset, OpsetLift &lift);

} // namespace plait::onnx_import
