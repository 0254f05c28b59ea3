// Kernel attributes as the plan encodes them (plan.fbs `Attr`); no other runtime dependency, so
// that the compiler's workspace sizing (runtime/cpu/Workspace.h) reads them as the kernels do.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace plait::rt {

/// One attribute of an instruction, decoded from the plan (plan.fbs `Attr`).
struct AttrValue {
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string str;
};

/// Attributes of one instruction, by name. Names are the ODS attribute names in
/// ir/PlaitOps.td; a DefaultValuedAttr may be absent, so kernels pass the ODS default.
/// Lookups never allocate: kernels read attributes on every call.
class Attrs {
public:
  void set(std::string name, AttrValue v) { values_[std::move(name)] = std::move(v); }
  bool has(std::string_view name) const { return values_.find(name) != values_.end(); }
  int64_t getInt(std::string_view name, int64_t dflt) const;
  bool getBool(std::string_view name, bool dflt) const { return getInt(name, dflt) != 0; }
  double getFloat(std::string_view name, double dflt) const;
  /// The attribute's integers, empty when absent; valid as long as this Attrs is.
  const std::vector<int64_t> &getInts(std::string_view name) const;
  /// The attribute's floats, empty when absent; valid as long as this Attrs is.
  const std::vector<double> &getFloats(std::string_view name) const;
  std::string getStr(std::string_view name, std::string_view dflt) const;
  /// As getStr, without copying: valid as long as this Attrs and `dflt` are.
  std::string_view getStrView(std::string_view name, std::string_view dflt) const;

private:
  std::map<std::string, AttrValue, std::less<>> values_;
};

} // namespace plait::rt
