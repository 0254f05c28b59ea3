// Attribute accessors shared by the kernels, the plan loader and the compiler's workspace sizing.
#include "runtime/Attrs.h"

#include <cmath>

namespace plait::rt {
namespace {

/// A float attribute read as an integer: truncated toward zero, saturating at int64's range
/// (a cast of a value outside it is undefined behaviour, and a plan's floats are anyone's);
/// NaN reads as `dflt`.
int64_t truncatedInt(double v, int64_t dflt) {
  if (std::isnan(v))
    return dflt;
  if (v >= 0x1p63)
    return INT64_MAX;
  if (v < -0x1p63)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

} // namespace

int64_t Attrs::getInt(std::string_view name, int64_t dflt) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return dflt;
  if (!it->second.ints.empty())
    return it->second.ints.front();
  if (!it->second.floats.empty())
    return truncatedInt(it->second.floats.front(), dflt);
  return dflt;
}

double Attrs::getFloat(std::string_view name, double dflt) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return dflt;
  if (!it->second.floats.empty())
    return it->second.floats.front();
  if (!it->second.ints.empty())
    return static_cast<double>(it->second.ints.front());
  return dflt;
}

const std::vector<int64_t> &Attrs::getInts(std::string_view name) const {
  static const std::vector<int64_t> kNone;
  auto it = values_.find(name);
  return it == values_.end() ? kNone : it->second.ints;
}

const std::vector<double> &Attrs::getFloats(std::string_view name) const {
  static const std::vector<double> kNone;
  auto it = values_.find(name);
  return it == values_.end() ? kNone : it->second.floats;
}

std::string_view Attrs::getStrView(std::string_view name, std::string_view dflt) const {
  auto it = values_.find(name);
  // An attribute that carries numbers is not a string attribute: fall back to the default.
  if (it == values_.end() || (it->second.str.empty() &&
                              (!it->second.ints.empty() || !it->second.floats.empty())))
    return dflt;
  return it->second.str;
}

std::string Attrs::getStr(std::string_view name, std::string_view dflt) const {
  return std::string(getStrView(name, dflt));
}

} // namespace plait::rt
