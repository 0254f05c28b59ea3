// Reading and writing cluster specs (YAML through yaml-cpp; line numbers from its marks).
#include "runtime/cluster/ClusterSpec.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "runtime/cluster/Units.h"

namespace plait::cluster {

using rt::Status;

namespace {

constexpr std::string_view kDtypeNames[kNumDtypes] = {"fp32", "tf32", "bf16", "fp16", "fp8"};

// Reads one spec, turning every problem into "FILE:LINE: FIELD: message".
class SpecReader {
public:
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  Status read(const YAML::Node &root, ClusterSpec &spec);

private:
  // 1-based line of `node`, or of the closest enclosing node that has one.
  int lineOf(const YAML::Node &node, int fallback) const {
    YAML::Mark mark = node.Mark();
    return mark.is_null() ? fallback : mark.line + 1;
  }

  Status fail(int line, std::string_view field, std::string_view message) const {
    return Status::errorf("{}:{}: {}: {}", file_, line, rt::printable(field),
                          rt::printable(message));
  }

  // `map` is a mapping whose keys are all in `allowed`, each at most once; `fields` gets
  // each key's value node and line.
  struct Field {
    YAML::Node value;
    int line = 0;
  };
  using Fields = std::vector<std::pair<std::string, Field>>;
  Status fieldsOf(const YAML::Node &map, std::string_view path, int line,
                  std::initializer_list<std::string_view> allowed, Fields &fields) const;

  static const Field *find(const Fields &fields, std::string_view key) {
    for (const auto &[name, field] : fields)
      if (name == key)
        return &field;
    return nullptr;
  }

  // The field `key` of a mapping at `path` (line `line`), which must be there.
  Status require(const Fields &fields, std::string_view path, int line, std::string_view key,
                 const Field *&out, std::string_view why = {}) const {
    out = find(fields, key);
    if (out)
      return {};
    return fail(line, path.empty() ? "spec" : path,
                fmt::format("missing required field '{}'{}", key, why));
  }

  Status scalar(const Field &field, const std::string &path, std::string &out) const {
    if (!field.value.IsScalar())
      return fail(field.line, path, "expected a single value");
    out = field.value.Scalar();
    return {};
  }

  Status readString(const Field &field, const std::string &path, std::string &out) const {
    PLAIT_RETURN_IF_ERROR(scalar(field, path, out));
    if (out.empty())
      return fail(field.line, path, "must not be empty");
    return {};
  }

  Status readCount(const Field &field, const std::string &path, uint32_t &out) const {
    std::string text;
    PLAIT_RETURN_IF_ERROR(scalar(field, path, text));
    char *end = nullptr;
    long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0')
      return fail(field.line, path, fmt::format("'{}': expected a whole number", text));
    if (value <= 0)
      return fail(field.line, path, fmt::format("'{}': must be positive", text));
    if (value > 1'000'000)
      return fail(field.line, path, fmt::format("'{}': too large", text));
    out = uint32_t(value);
    return {};
  }

  Status readQuantity(const Field &field, const std::string &path, Quantity kind,
                      double &out) const {
    std::string text, error;
    PLAIT_RETURN_IF_ERROR(scalar(field, path, text));
    if (!parseQuantity(text, kind, out, error))
      return fail(field.line, path, fmt::format("'{}': {}", text, error));
    if (!(out > 0))
      return fail(field.line, path, fmt::format("'{}': must be positive", text));
    return {};
  }

  // A plain number, optionally followed by `unit` ("3.5 USD"), in (0, max].
  Status readNumber(const Field &field, const std::string &path, double max, std::string_view unit,
                    double &out) const {
    std::string text;
    PLAIT_RETURN_IF_ERROR(scalar(field, path, text));
    char *end = nullptr;
    out = std::strtod(text.c_str(), &end);
    std::string_view rest(end);
    while (!rest.empty() && rest.front() == ' ')
      rest.remove_prefix(1);
    if (end == text.c_str() || (!rest.empty() && (unit.empty() || rest != unit)) ||
        !std::isfinite(out))
      return fail(field.line, path,
                  unit.empty() ? fmt::format("'{}': expected a number", text)
                               : fmt::format("'{}': expected a number of {}", text, unit));
    if (!(out > 0))
      return fail(field.line, path, fmt::format("'{}': must be positive", text));
    if (out > max)
      return fail(field.line, path, fmt::format("'{}': must be at most {}", text, max));
    return {};
  }

  Status readDevice(const Field &field, DeviceSpec &device) const;
  Status readLink(const Field &field, const std::string &path, Link &link) const;
  Status readLinkFit(const Fields &fields, const std::string &path, int line, LinkFit &fit) const;
  Status readKernels(const Field &field, DeviceSpec &device) const;
  Status readThreads(const Field &field, DeviceSpec &device) const;
  Status readGemmSizes(const Field &field, DeviceSpec &device) const;

  std::string file_;
};

Status SpecReader::fieldsOf(const YAML::Node &map, std::string_view path, int line,
                            std::initializer_list<std::string_view> allowed, Fields &fields) const {
  if (!map.IsMap())
    return fail(line, path.empty() ? "spec" : path, "expected a mapping of fields");
  std::string expected;
  for (std::string_view name : allowed)
    expected += (expected.empty() ? "" : ", ") + std::string(name);
  for (auto it = map.begin(); it != map.end(); ++it) {
    int keyLine = lineOf(it->first, line);
    std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
    std::string keyPath = path.empty() ? key : fmt::format("{}.{}", path, key);
    bool known = false;
    for (std::string_view name : allowed)
      known |= name == key;
    if (!known)
      return fail(keyLine, keyPath, fmt::format("unknown field (expected one of {})", expected));
    if (find(fields, key))
      return fail(keyLine, keyPath, "given twice");
    fields.push_back({key, Field{it->second, keyLine}});
  }
  return {};
}

Status SpecReader::readLinkFit(const Fields &fields, const std::string &path, int line,
                               LinkFit &fit) const {
  const Field *bandwidth = nullptr, *latency = nullptr;
  PLAIT_RETURN_IF_ERROR(require(fields, path, line, "bandwidth", bandwidth));
  PLAIT_RETURN_IF_ERROR(require(fields, path, line, "latency", latency));
  PLAIT_RETURN_IF_ERROR(
      readQuantity(*bandwidth, path + ".bandwidth", Quantity::Rate, fit.bandwidth));
  return readQuantity(*latency, path + ".latency", Quantity::Time, fit.latency);
}

Status SpecReader::readLink(const Field &field, const std::string &path, Link &link) const {
  Fields fields;
  PLAIT_RETURN_IF_ERROR(fieldsOf(field.value, path, field.line,
                                 {"bandwidth", "latency", "all_reduce", "all_gather",
                                  "reduce_scatter"},
                                 fields));
  LinkFit all;
  PLAIT_RETURN_IF_ERROR(readLinkFit(fields, path, field.line, all));
  link.bandwidth = all.bandwidth;
  link.latency = all.latency;
  for (size_t k = 0; k < kNumCollectiveKinds; ++k) {
    const Field *kind = find(fields, kCollectiveKindNames[k]);
    if (!kind)
      continue;
    std::string kindPath = fmt::format("{}.{}", path, kCollectiveKindNames[k]);
    Fields kindFields;
    PLAIT_RETURN_IF_ERROR(
        fieldsOf(kind->value, kindPath, kind->line, {"bandwidth", "latency"}, kindFields));
    PLAIT_RETURN_IF_ERROR(readLinkFit(kindFields, kindPath, kind->line, link.byKind[k].emplace()));
  }
  return {};
}

Status SpecReader::readKernels(const Field &field, DeviceSpec &device) const {
  if (!field.value.IsMap())
    return fail(field.line, "device.kernels", "expected a mapping of kernel classes");
  std::string expected;
  for (std::string_view name : kKernelClassNames)
    expected += (expected.empty() ? "" : ", ") + std::string(name);
  for (auto it = field.value.begin(); it != field.value.end(); ++it) {
    int line = lineOf(it->first, field.line);
    std::string name = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
    std::string path = "device.kernels." + name;
    if (std::find(std::begin(kKernelClassNames), std::end(kKernelClassNames), name) ==
        std::end(kKernelClassNames))
      return fail(line, path, fmt::format("unknown kernel class (expected one of {})", expected));
    if (device.kernels.count(name))
      return fail(line, path, "given twice");
    Fields fields;
    PLAIT_RETURN_IF_ERROR(
        fieldsOf(it->second, path, line, {"ns_per_element", "overhead", "ns_per_row"}, fields));
    const Field *perElement = nullptr, *overhead = nullptr;
    PLAIT_RETURN_IF_ERROR(require(fields, path, line, "ns_per_element", perElement));
    PLAIT_RETURN_IF_ERROR(require(fields, path, line, "overhead", overhead));
    KernelRate rate;
    PLAIT_RETURN_IF_ERROR(
        readNumber(*perElement, path + ".ns_per_element", 1e9, {}, rate.nsPerElement));
    PLAIT_RETURN_IF_ERROR(
        readQuantity(*overhead, path + ".overhead", Quantity::Time, rate.overhead));
    if (const Field *perRow = find(fields, "ns_per_row"))
      PLAIT_RETURN_IF_ERROR(readNumber(*perRow, path + ".ns_per_row", 1e9, {}, rate.nsPerRow));
    device.kernels.emplace(name, rate);
  }
  return {};
}

Status SpecReader::readGemmSizes(const Field &field, DeviceSpec &device) const {
  const std::string path = "device.gemm_efficiency_by_size";
  if (!field.value.IsMap() || field.value.size() == 0)
    return fail(field.line, path,
                "expected a mapping of multiply-adds per GEMM call to efficiencies "
                "({262144: 0.9, ...})");
  for (auto it = field.value.begin(); it != field.value.end(); ++it) {
    int line = lineOf(it->first, field.line);
    std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
    char *end = nullptr;
    double size = std::strtod(key.c_str(), &end);
    if (key.empty() || *end != '\0' || !(size >= 1) || size > 1e18 || size != std::floor(size))
      return fail(line, path,
                  fmt::format("'{}': expected a whole number of multiply-adds (1 to 1e18)", key));
    if (device.gemmEfficiencyBySize.count(size))
      return fail(line, path + "." + key, "given twice");
    double efficiency = 0;
    PLAIT_RETURN_IF_ERROR(
        readNumber(Field{it->second, line}, path + "." + key, 1.0, {}, efficiency));
    device.gemmEfficiencyBySize.emplace(size, efficiency);
  }
  return {};
}

Status SpecReader::readThreads(const Field &field, DeviceSpec &device) const {
  const std::string path = "device.threads";
  if (device.kind != DeviceKind::Cpu)
    return fail(field.line, path, "only a cpu device has threads (its kernels' host threads)");
  Fields fields;
  PLAIT_RETURN_IF_ERROR(fieldsOf(field.value, path, field.line,
                                 {"count", "gemm_speedup", "element_speedup", "region_overhead"},
                                 fields));
  const Field *count = nullptr, *gemm = nullptr, *element = nullptr, *region = nullptr;
  PLAIT_RETURN_IF_ERROR(require(fields, path, field.line, "count", count));
  PLAIT_RETURN_IF_ERROR(require(fields, path, field.line, "gemm_speedup", gemm));
  PLAIT_RETURN_IF_ERROR(require(fields, path, field.line, "element_speedup", element));
  PLAIT_RETURN_IF_ERROR(require(fields, path, field.line, "region_overhead", region));
  ThreadScaling &t = device.threads.emplace();
  PLAIT_RETURN_IF_ERROR(readCount(*count, path + ".count", t.count));
  // plait-run's --threads takes at most 256 (Parallel.h's kMaxKernelThreads).
  if (t.count < 2 || t.count > 256)
    return fail(count->line, path + ".count",
                fmt::format("'{}': must be between 2 and 256 (one thread needs no scaling)",
                            t.count));
  PLAIT_RETURN_IF_ERROR(
      readNumber(*gemm, path + ".gemm_speedup", double(t.count), {}, t.gemmSpeedup));
  PLAIT_RETURN_IF_ERROR(
      readNumber(*element, path + ".element_speedup", double(t.count), {}, t.elementSpeedup));
  return readQuantity(*region, path + ".region_overhead", Quantity::Time, t.regionOverhead);
}

Status SpecReader::readDevice(const Field &field, DeviceSpec &device) const {
  Fields fields;
  PLAIT_RETURN_IF_ERROR(fieldsOf(field.value, "device", field.line,
                                 {"kind", "model", "memory", "memory_bandwidth", "peak_flops",
                                  "efficiency", "gemm_efficiency_by_size", "launch_overhead",
                                  "kernels", "threads"},
                                 fields));
  const Field *kind = nullptr, *memory = nullptr, *bandwidth = nullptr, *peaks = nullptr,
              *launch = nullptr;
  PLAIT_RETURN_IF_ERROR(require(fields, "device", field.line, "kind", kind));
  PLAIT_RETURN_IF_ERROR(require(fields, "device", field.line, "memory", memory));
  PLAIT_RETURN_IF_ERROR(require(fields, "device", field.line, "memory_bandwidth", bandwidth));
  PLAIT_RETURN_IF_ERROR(require(fields, "device", field.line, "peak_flops", peaks));
  PLAIT_RETURN_IF_ERROR(require(fields, "device", field.line, "launch_overhead", launch));

  std::string kindText;
  PLAIT_RETURN_IF_ERROR(scalar(*kind, "device.kind", kindText));
  if (kindText == "gpu")
    device.kind = DeviceKind::Gpu;
  else if (kindText == "cpu")
    device.kind = DeviceKind::Cpu;
  else
    return fail(kind->line, "device.kind", fmt::format("'{}': expected gpu or cpu", kindText));
  if (const Field *model = find(fields, "model"))
    PLAIT_RETURN_IF_ERROR(readString(*model, "device.model", device.model));

  double memoryBytes = 0;
  PLAIT_RETURN_IF_ERROR(readQuantity(*memory, "device.memory", Quantity::Bytes, memoryBytes));
  if (memoryBytes < 1 || memoryBytes > 1e18)
    return fail(memory->line, "device.memory", "must be between 1 B and 1 EB");
  device.memoryBytes = uint64_t(std::llround(memoryBytes));
  PLAIT_RETURN_IF_ERROR(
      readQuantity(*bandwidth, "device.memory_bandwidth", Quantity::Rate, device.memoryBandwidth));
  PLAIT_RETURN_IF_ERROR(
      readQuantity(*launch, "device.launch_overhead", Quantity::Time, device.launchOverhead));

  Fields peakFields;
  PLAIT_RETURN_IF_ERROR(fieldsOf(peaks->value, "device.peak_flops", peaks->line,
                                 {"fp32", "tf32", "bf16", "fp16", "fp8"}, peakFields));
  const Field *fp32 = nullptr;
  PLAIT_RETURN_IF_ERROR(require(peakFields, "device.peak_flops", peaks->line, "fp32", fp32));
  device.peakFlops = {};
  for (const auto &[name, peak] : peakFields)
    PLAIT_RETURN_IF_ERROR(readQuantity(peak, "device.peak_flops." + name, Quantity::FlopRate,
                                       device.peakFlops[size_t(*dtypeFromName(name))]));

  if (const Field *kernels = find(fields, "kernels"))
    PLAIT_RETURN_IF_ERROR(readKernels(*kernels, device));
  if (const Field *threads = find(fields, "threads"))
    PLAIT_RETURN_IF_ERROR(readThreads(*threads, device));
  if (const Field *sizes = find(fields, "gemm_efficiency_by_size"))
    PLAIT_RETURN_IF_ERROR(readGemmSizes(*sizes, device));

  device.gemmEfficiency = 0.7;
  device.memoryEfficiency = 0.8;
  if (const Field *efficiency = find(fields, "efficiency")) {
    Fields fractions;
    PLAIT_RETURN_IF_ERROR(fieldsOf(efficiency->value, "device.efficiency", efficiency->line,
                                   {"gemm", "memory"}, fractions));
    if (const Field *gemm = find(fractions, "gemm"))
      PLAIT_RETURN_IF_ERROR(
          readNumber(*gemm, "device.efficiency.gemm", 1.0, {}, device.gemmEfficiency));
    if (const Field *memoryBound = find(fractions, "memory"))
      PLAIT_RETURN_IF_ERROR(
          readNumber(*memoryBound, "device.efficiency.memory", 1.0, {}, device.memoryEfficiency));
  }
  return {};
}

Status SpecReader::read(const YAML::Node &root, ClusterSpec &spec) {
  if (!root || root.IsNull())
    return Status::errorf("{}: empty cluster spec", file_);
  Fields fields;
  PLAIT_RETURN_IF_ERROR(fieldsOf(
      root, "", 1, {"name", "source", "nodes", "devices_per_node", "device", "links", "price"},
      fields));
  const Field *name = nullptr, *source = nullptr, *nodes = nullptr, *perNode = nullptr,
              *device = nullptr;
  PLAIT_RETURN_IF_ERROR(require(fields, "", 1, "name", name));
  PLAIT_RETURN_IF_ERROR(require(fields, "", 1, "source", source));
  PLAIT_RETURN_IF_ERROR(require(fields, "", 1, "nodes", nodes));
  PLAIT_RETURN_IF_ERROR(require(fields, "", 1, "devices_per_node", perNode));
  PLAIT_RETURN_IF_ERROR(require(fields, "", 1, "device", device));

  spec = ClusterSpec();
  PLAIT_RETURN_IF_ERROR(readString(*name, "name", spec.name));
  PLAIT_RETURN_IF_ERROR(readString(*source, "source", spec.source));
  PLAIT_RETURN_IF_ERROR(readCount(*nodes, "nodes", spec.nodes));
  PLAIT_RETURN_IF_ERROR(readCount(*perNode, "devices_per_node", spec.devicesPerNode));
  PLAIT_RETURN_IF_ERROR(readDevice(*device, spec.device));

  // Links: each one the shape needs, and no other (a link nothing crosses is a mistake).
  const Field *links = find(fields, "links");
  const bool needIntra = spec.devicesPerNode > 1, needInter = spec.nodes > 1;
  if (!links && (needIntra || needInter))
    return fail(1, "spec",
                fmt::format("missing required field 'links' ({})",
                            needInter
                                ? fmt::format("nodes is {}", spec.nodes)
                                : fmt::format("devices_per_node is {}", spec.devicesPerNode)));
  if (links) {
    Fields linkFields;
    PLAIT_RETURN_IF_ERROR(
        fieldsOf(links->value, "links", links->line, {"intra_node", "inter_node"}, linkFields));
    const Field *intra = find(linkFields, "intra_node"), *inter = find(linkFields, "inter_node");
    if (needIntra)
      PLAIT_RETURN_IF_ERROR(require(linkFields, "links", links->line, "intra_node", intra,
                                    fmt::format(" (devices_per_node is {})", spec.devicesPerNode)));
    if (needInter)
      PLAIT_RETURN_IF_ERROR(require(linkFields, "links", links->line, "inter_node", inter,
                                    fmt::format(" (nodes is {})", spec.nodes)));
    if (intra && !needIntra)
      return fail(intra->line, "links.intra_node",
                  "given, but devices_per_node is 1 (no device shares a node)");
    if (inter && !needInter)
      return fail(inter->line, "links.inter_node", "given, but nodes is 1");
    if (intra)
      PLAIT_RETURN_IF_ERROR(readLink(*intra, "links.intra_node", spec.intraNode.emplace()));
    if (inter)
      PLAIT_RETURN_IF_ERROR(readLink(*inter, "links.inter_node", spec.interNode.emplace()));
  }

  if (const Field *price = find(fields, "price")) {
    Fields priceFields;
    PLAIT_RETURN_IF_ERROR(
        fieldsOf(price->value, "price", price->line, {"per_device_hour", "note"}, priceFields));
    const Field *perHour = nullptr;
    PLAIT_RETURN_IF_ERROR(require(priceFields, "price", price->line, "per_device_hour", perHour));
    PLAIT_RETURN_IF_ERROR(readNumber(*perHour, "price.per_device_hour", 1e6, "USD",
                                     spec.pricePerDeviceHour.emplace()));
    if (const Field *note = find(priceFields, "note"))
      PLAIT_RETURN_IF_ERROR(readString(*note, "price.note", spec.priceNote));
  }
  return {};
}

// `text` as a YAML double-quoted scalar.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\')
      out += {'\\', char(c)};
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += char(c);
  }
  return out + "\"";
}

std::string formatLinkFit(double bandwidth, double latency) {
  return fmt::format("bandwidth: {}, latency: {}", formatQuantity(bandwidth, Quantity::Rate),
                     formatQuantity(latency, Quantity::Time));
}

std::string formatLink(const Link &link) {
  std::string out = formatLinkFit(link.bandwidth, link.latency);
  for (size_t k = 0; k < kNumCollectiveKinds; ++k)
    if (link.byKind[k])
      out += fmt::format(",\n      {}: {{{}}}", kCollectiveKindNames[k],
                         formatLinkFit(link.byKind[k]->bandwidth, link.byKind[k]->latency));
  return "{" + out + "}";
}

} // namespace

std::string_view dtypeName(Dtype dtype) { return kDtypeNames[size_t(dtype)]; }

double DeviceSpec::gemmEfficiencyFor(double multiplyAdds) const {
  if (gemmEfficiencyBySize.empty())
    return gemmEfficiency;
  auto above = gemmEfficiencyBySize.lower_bound(multiplyAdds);
  if (above == gemmEfficiencyBySize.begin())
    return above->second;
  if (above == gemmEfficiencyBySize.end())
    return std::prev(above)->second;
  auto below = std::prev(above);
  double t = std::log(multiplyAdds / below->first) / std::log(above->first / below->first);
  return below->second + t * (above->second - below->second);
}

std::optional<Dtype> dtypeFromName(std::string_view name) {
  for (size_t i = 0; i < kNumDtypes; ++i)
    if (kDtypeNames[i] == name)
      return Dtype(i);
  return std::nullopt;
}

Status parseClusterSpecText(const std::string &text, const std::string &displayName,
                            ClusterSpec &spec) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception &e) {
    return Status::errorf("{}:{}: YAML syntax error: {}", displayName,
                          e.mark.is_null() ? 1 : e.mark.line + 1, rt::printable(e.msg));
  }
  try {
    return SpecReader(displayName).read(root, spec);
  } catch (const YAML::Exception &e) { // e.g. an alias to a missing anchor
    return Status::errorf("{}:{}: {}", displayName, e.mark.is_null() ? 1 : e.mark.line + 1,
                          rt::printable(e.msg));
  }
}

Status parseClusterSpec(const std::string &path, ClusterSpec &spec) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::errorf("{}: cannot open cluster spec", path);
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Status::errorf("{}: cannot read cluster spec", path);
  return parseClusterSpecText(text.str(), path, spec);
}

std::string writeClusterSpec(const ClusterSpec &spec) {
  const DeviceSpec &d = spec.device;
  std::string out;
  out += fmt::format("name: {}\n", quoted(spec.name));
  out += fmt::format("source: {}\n", quoted(spec.source));
  out += fmt::format("nodes: {}\n", spec.nodes);
  out += fmt::format("devices_per_node: {}\n", spec.devicesPerNode);
  out += "device:\n";
  out += fmt::format("  kind: {}\n", d.kind == DeviceKind::Gpu ? "gpu" : "cpu");
  if (!d.model.empty())
    out += fmt::format("  model: {}\n", quoted(d.model));
  out += fmt::format("  memory: {}\n", formatQuantity(double(d.memoryBytes), Quantity::Bytes));
  out += fmt::format("  memory_bandwidth: {}\n", formatQuantity(d.memoryBandwidth, Quantity::Rate));
  std::string peaks;
  for (size_t i = 0; i < kNumDtypes; ++i)
    if (d.peakFlops[i] > 0)
      peaks += fmt::format("{}{}: {}", peaks.empty() ? "" : ", ", kDtypeNames[i],
                           formatQuantity(d.peakFlops[i], Quantity::FlopRate));
  out += fmt::format("  peak_flops: {{{}}}\n", peaks);
  out +=
      fmt::format("  efficiency: {{gemm: {}, memory: {}}}\n", d.gemmEfficiency, d.memoryEfficiency);
  if (!d.gemmEfficiencyBySize.empty()) {
    std::string sizes;
    for (const auto &[size, efficiency] : d.gemmEfficiencyBySize)
      sizes += fmt::format("{}{:.0f}: {}", sizes.empty() ? "" : ", ", size, efficiency);
    out += fmt::format("  gemm_efficiency_by_size: {{{}}}\n", sizes);
  }
  out += fmt::format("  launch_overhead: {}\n", formatQuantity(d.launchOverhead, Quantity::Time));
  if (!d.kernels.empty()) {
    out += "  kernels:\n";
    for (const auto &[name, rate] : d.kernels)
      out += fmt::format("    {}: {{ns_per_element: {}, overhead: {}{}}}\n", name,
                         rate.nsPerElement, formatQuantity(rate.overhead, Quantity::Time),
                         rate.nsPerRow > 0 ? fmt::format(", ns_per_row: {}", rate.nsPerRow)
                                           : "");
  }
  if (d.threads)
    out += fmt::format("  threads: {{count: {}, gemm_speedup: {}, element_speedup: {}, "
                       "region_overhead: {}}}\n",
                       d.threads->count, d.threads->gemmSpeedup, d.threads->elementSpeedup,
                       formatQuantity(d.threads->regionOverhead, Quantity::Time));
  if (spec.intraNode || spec.interNode) {
    out += "links:\n";
    if (spec.intraNode)
      out += fmt::format("  intra_node: {}\n", formatLink(*spec.intraNode));
    if (spec.interNode)
      out += fmt::format("  inter_node: {}\n", formatLink(*spec.interNode));
  }
  if (spec.pricePerDeviceHour) {
    out += "price:\n";
    out += fmt::format("  per_device_hour: {} USD\n", *spec.pricePerDeviceHour);
    if (!spec.priceNote.empty())
      out += fmt::format("  note: {}\n", quoted(spec.priceNote));
  }
  return out;
}

} // namespace plait::cluster
