// Cluster specs: a full spec, every malformed-input message (exact, with its line), the
// write/parse round trip, and every spec shipped in samples/clusters/.
#include "runtime/cluster/ClusterSpec.h"

#include <filesystem>
#include <regex>

#include <gtest/gtest.h>

namespace plait::cluster {
namespace {

// Line numbers below count from the first line of this text.
const std::string kSpec = R"(name: test-8x2
source: "a datasheet"
nodes: 2
devices_per_node: 8
device:
  kind: gpu
  model: Test GPU
  memory: 80 GiB
  memory_bandwidth: 3.35 TB/s
  peak_flops: {fp32: 67 TFLOPS, bf16: 989.5 TFLOPS}
  efficiency: {gemm: 0.7, memory: 0.8}
  launch_overhead: 4 us
links:
  intra_node: {bandwidth: 450 GB/s, latency: 2 us}
  inter_node:
    bandwidth: 400 Gbit/s
    latency: 5 us
price:
  per_device_hour: 3.5 USD
  note: example
)";

// kSpec with `from` replaced by `to` (which must occur once).
std::string edited(const std::string &from, const std::string &to) {
  std::string text = kSpec;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string errorOf(const std::string &text) {
  ClusterSpec spec;
  rt::Status status = parseClusterSpecText(text, "spec.yaml", spec);
  EXPECT_FALSE(status.ok());
  return status.message();
}

TEST(ClusterSpec, ParsesEveryField) {
  ClusterSpec spec;
  rt::Status status = parseClusterSpecText(kSpec, "spec.yaml", spec);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(spec.name, "test-8x2");
  EXPECT_EQ(spec.source, "a datasheet");
  EXPECT_EQ(spec.nodes, 2u);
  EXPECT_EQ(spec.devicesPerNode, 8u);
  EXPECT_EQ(spec.worldSize(), 16u);
  EXPECT_EQ(spec.device.kind, DeviceKind::Gpu);
  EXPECT_EQ(spec.device.model, "Test GPU");
  EXPECT_EQ(spec.device.memoryBytes, 80ull << 30);
  EXPECT_DOUBLE_EQ(spec.device.memoryBandwidth, 3.35e12);
  EXPECT_EQ(spec.device.peak(Dtype::Fp32), 67e12);
  EXPECT_EQ(spec.device.peak(Dtype::Bf16), 989.5e12);
  EXPECT_EQ(spec.device.peak(Dtype::Fp8), 0.0);
  EXPECT_EQ(spec.device.gemmEfficiency, 0.7);
  EXPECT_EQ(spec.device.memoryEfficiency, 0.8);
  EXPECT_EQ(spec.device.launchOverhead, 4e-6);
  ASSERT_TRUE(spec.intraNode && spec.interNode);
  EXPECT_EQ(spec.intraNode->bandwidth, 450e9);
  EXPECT_EQ(spec.intraNode->latency, 2e-6);
  EXPECT_EQ(spec.interNode->bandwidth, 50e9);
  EXPECT_EQ(spec.interNode->latency, 5e-6);
  ASSERT_TRUE(spec.pricePerDeviceHour);
  EXPECT_EQ(*spec.pricePerDeviceHour, 3.5);
  EXPECT_EQ(spec.priceNote, "example");
}

TEST(ClusterSpec, OptionalFieldsAndDefaults) {
  ClusterSpec spec;
  std::string text = R"(name: one
source: x
nodes: 1
devices_per_node: 1
device: {kind: cpu, memory: 1 GiB, memory_bandwidth: 10 GB/s, peak_flops: {fp32: 50 GFLOPS},
         launch_overhead: 1 us}
)";
  rt::Status status = parseClusterSpecText(text, "one.yaml", spec);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(spec.device.kind, DeviceKind::Cpu);
  EXPECT_EQ(spec.device.gemmEfficiency, 0.7);
  EXPECT_EQ(spec.device.memoryEfficiency, 0.8);
  EXPECT_FALSE(spec.intraNode || spec.interNode || spec.pricePerDeviceHour);
}

TEST(ClusterSpec, UnknownFieldNamesItsLine) {
  EXPECT_EQ(errorOf(edited("  memory: 80 GiB", "  memroy: 80 GiB")),
            "spec.yaml:8: device.memroy: unknown field (expected one of kind, model, memory, "
            "memory_bandwidth, peak_flops, efficiency, gemm_efficiency_by_size, launch_overhead, "
            "kernels, threads)");
  EXPECT_EQ(errorOf(edited("nodes: 2", "nodes: 2\nnode: 2")),
            "spec.yaml:4: node: unknown field (expected one of name, source, nodes, "
            "devices_per_node, device, links, price)");
  EXPECT_EQ(errorOf(edited("bf16: 989.5 TFLOPS", "bf61: 989.5 TFLOPS")),
            "spec.yaml:10: device.peak_flops.bf61: unknown field (expected one of fp32, tf32, "
            "bf16, fp16, fp8)");
  EXPECT_EQ(errorOf(edited("    latency: 5 us", "    latency: 5 us\n    latncy: 5 us")),
            "spec.yaml:18: links.inter_node.latncy: unknown field (expected one of bandwidth, "
            "latency, all_reduce, all_gather, reduce_scatter)");
}

TEST(ClusterSpec, BadUnitNamesFieldLineAndText) {
  EXPECT_EQ(errorOf(edited("memory: 80 GiB", "memory: 80 GIB")),
            "spec.yaml:8: device.memory: '80 GIB': unknown unit 'GIB' (expected one of TiB, "
            "TB, GiB, GB, MiB, MB, KiB, KB, B)");
  EXPECT_EQ(errorOf(edited("400 Gbit/s", "400 Gb/s")),
            "spec.yaml:16: links.inter_node.bandwidth: '400 Gb/s': unknown unit 'Gb/s' "
            "(expected one of TiB/s, TB/s, Tbit/s, GiB/s, GB/s, Gbit/s, MiB/s, MB/s, Mbit/s, "
            "KiB/s, KB/s, B/s)");
  EXPECT_EQ(errorOf(edited("launch_overhead: 4 us", "launch_overhead: 4")),
            "spec.yaml:12: device.launch_overhead: '4': missing unit (one of s, ms, us, ns)");
  EXPECT_EQ(errorOf(edited("fp32: 67 TFLOPS", "fp32: 67 TB/s")),
            "spec.yaml:10: device.peak_flops.fp32: '67 TB/s': unknown unit 'TB/s' (expected "
            "one of PFLOPS, TFLOPS, GFLOPS, MFLOPS, FLOPS)");
  EXPECT_EQ(errorOf(edited("devices_per_node: 8", "devices_per_node: eight")),
            "spec.yaml:4: devices_per_node: 'eight': expected a whole number");
  EXPECT_EQ(errorOf(edited("kind: gpu", "kind: tpu")),
            "spec.yaml:6: device.kind: 'tpu': expected gpu or cpu");
  EXPECT_EQ(errorOf(edited("3.5 USD", "3.5 EUR")),
            "spec.yaml:19: price.per_device_hour: '3.5 EUR': expected a number of USD");
}

TEST(ClusterSpec, MissingFieldIsNamed) {
  EXPECT_EQ(errorOf(edited("  memory_bandwidth: 3.35 TB/s\n", "")),
            "spec.yaml:5: device: missing required field 'memory_bandwidth'");
  EXPECT_EQ(errorOf(edited("name: test-8x2\n", "")),
            "spec.yaml:1: spec: missing required field 'name'");
  EXPECT_EQ(errorOf(edited("fp32: 67 TFLOPS, ", "")),
            "spec.yaml:10: device.peak_flops: missing required field 'fp32'");
  EXPECT_EQ(errorOf(edited("    latency: 5 us\n", "")),
            "spec.yaml:15: links.inter_node: missing required field 'latency'");
  EXPECT_EQ(errorOf(edited("  intra_node: {bandwidth: 450 GB/s, latency: 2 us}\n", "")),
            "spec.yaml:13: links: missing required field 'intra_node' (devices_per_node is 8)");
  std::string noLinks = kSpec.substr(0, kSpec.find("links:")) + "price: {per_device_hour: 1}\n";
  EXPECT_EQ(errorOf(noLinks), "spec.yaml:1: spec: missing required field 'links' (nodes is 2)");
  EXPECT_EQ(errorOf(edited("  per_device_hour: 3.5 USD\n", "")),
            "spec.yaml:18: price: missing required field 'per_device_hour'");
}

TEST(ClusterSpec, NonPositiveValuesAreRefused) {
  EXPECT_EQ(errorOf(edited("memory: 80 GiB", "memory: -80 GiB")),
            "spec.yaml:8: device.memory: '-80 GiB': must be positive");
  EXPECT_EQ(errorOf(edited("latency: 2 us", "latency: 0 us")),
            "spec.yaml:14: links.intra_node.latency: '0 us': must be positive");
  EXPECT_EQ(errorOf(edited("nodes: 2", "nodes: 0")), "spec.yaml:3: nodes: '0': must be positive");
  EXPECT_EQ(errorOf(edited("gemm: 0.7", "gemm: -0.7")),
            "spec.yaml:11: device.efficiency.gemm: '-0.7': must be positive");
  EXPECT_EQ(errorOf(edited("gemm: 0.7", "gemm: 1.5")),
            "spec.yaml:11: device.efficiency.gemm: '1.5': must be at most 1");
}

TEST(ClusterSpec, StructuralErrors) {
  EXPECT_EQ(errorOf(edited("nodes: 2", "nodes: 2\nnodes: 3")), "spec.yaml:4: nodes: given twice");
  EXPECT_EQ(errorOf(edited("nodes: 2", "nodes: 1")),
            "spec.yaml:15: links.inter_node: given, but nodes is 1");
  EXPECT_EQ(errorOf(edited("  kind: gpu", "  kind: [gpu]")),
            "spec.yaml:6: device.kind: expected a single value");
  EXPECT_EQ(errorOf("name: [unclosed\n"),
            "spec.yaml:2: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(errorOf(""), "spec.yaml: empty cluster spec");
  EXPECT_EQ(errorOf("- a list\n"), "spec.yaml:1: spec: expected a mapping of fields");
  ClusterSpec spec;
  EXPECT_EQ(parseClusterSpec("/nonexistent/x.yaml", spec).message(),
            "/nonexistent/x.yaml: cannot open cluster spec");
}

// device.kernels: measured element-kernel rates by class, strict like every other field.
TEST(ClusterSpec, KernelRates) {
  const std::string withKernels = edited(
      "  launch_overhead: 4 us\n",
      "  launch_overhead: 4 us\n  kernels:\n    binary: {ns_per_element: 0.3, overhead: 120 ns}\n"
      "    pool:\n      ns_per_element: 2.5\n      overhead: 1 us\n");
  ClusterSpec spec;
  rt::Status status = parseClusterSpecText(withKernels, "spec.yaml", spec);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(spec.device.kernels.size(), 2u);
  EXPECT_DOUBLE_EQ(spec.device.kernels.at("binary").nsPerElement, 0.3);
  EXPECT_DOUBLE_EQ(spec.device.kernels.at("binary").overhead, 120e-9);
  EXPECT_DOUBLE_EQ(spec.device.kernels.at("pool").nsPerElement, 2.5);
  EXPECT_DOUBLE_EQ(spec.device.kernels.at("pool").overhead, 1e-6);

  auto replaced = [&](const std::string &from, const std::string &to) {
    std::string text = withKernels;
    return text.replace(text.find(from), from.size(), to);
  };
  EXPECT_EQ(errorOf(replaced("    binary:", "    binry:")),
            "spec.yaml:14: device.kernels.binry: unknown kernel class (expected one of binary, "
            "unary, transcendental, pow, where, cast, movement, copy, reduction, loss, loss_grad, "
            "softmax, norm, pool, pool_grad, adamw, sgd, matmul, fused, conv, conv_depthwise, "
            "conv_grouped)");
  EXPECT_EQ(errorOf(replaced("ns_per_element: 0.3", "ns_per_element: -1")),
            "spec.yaml:14: device.kernels.binary.ns_per_element: '-1': must be positive");
  EXPECT_EQ(errorOf(replaced("ns_per_element: 0.3", "ns_per_element: 0.3 ns")),
            "spec.yaml:14: device.kernels.binary.ns_per_element: '0.3 ns': expected a number");
  EXPECT_EQ(errorOf(replaced("overhead: 120 ns", "overhead: 120 furlongs")).rfind(
                "spec.yaml:14: device.kernels.binary.overhead: '120 furlongs': ", 0),
            0u);
  EXPECT_EQ(errorOf(replaced("      overhead: 1 us\n", "")),
            "spec.yaml:15: device.kernels.pool: missing required field 'overhead'");
  EXPECT_EQ(errorOf(replaced("      overhead: 1 us\n", "      overhead: 1 us\n      extra: 1\n")),
            "spec.yaml:18: device.kernels.pool.extra: unknown field (expected one of "
            "ns_per_element, overhead, ns_per_row)");
  EXPECT_EQ(errorOf(replaced("overhead: 120 ns}", "overhead: 120 ns, ns_per_row: 0}")),
            "spec.yaml:14: device.kernels.binary.ns_per_row: '0': must be positive");
  EXPECT_EQ(errorOf(replaced("  kernels:\n", "  kernels: 3\n  x:\n")).rfind("spec.yaml:", 0), 0u);

  // Written back exactly, in class order.
  std::string text = writeClusterSpec(spec);
  EXPECT_NE(text.find("  kernels:\n    binary: {ns_per_element: 0.3, overhead: 120 ns}\n"
                      "    pool: {ns_per_element: 2.5, overhead: 1 us}\n"),
            std::string::npos)
      << text;
  ClusterSpec back;
  ASSERT_TRUE(parseClusterSpecText(text, "written.yaml", back).ok());
  EXPECT_EQ(writeClusterSpec(back), text);

  // The optional per-row time (row-wise kernels, a matmul's GEMMs), written back only when
  // there is one.
  ClusterSpec rows;
  status = parseClusterSpecText(
      replaced("overhead: 120 ns}", "overhead: 120 ns, ns_per_row: 37.5}"), "spec.yaml", rows);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_DOUBLE_EQ(rows.device.kernels.at("binary").nsPerRow, 37.5);
  EXPECT_EQ(rows.device.kernels.at("pool").nsPerRow, 0);
  text = writeClusterSpec(rows);
  EXPECT_NE(text.find("    binary: {ns_per_element: 0.3, overhead: 120 ns, ns_per_row: 37.5}\n"
                      "    pool: {ns_per_element: 2.5, overhead: 1 us}\n"),
            std::string::npos)
      << text;
}

// `spec` written has `line`, and parses back to the same text.
void expectWrittenBack(const ClusterSpec &spec, const std::string &line) {
  std::string text = writeClusterSpec(spec);
  EXPECT_NE(text.find(line), std::string::npos) << text;
  ClusterSpec back;
  ASSERT_TRUE(parseClusterSpecText(text, "written.yaml", back).ok());
  EXPECT_EQ(writeClusterSpec(back), text);
}

// A CPU device's optional thread scaling (plait-calibrate measures it; the cost model scales
// split kernels by it): read, refused on a GPU and out of range, written back exactly.
TEST(ClusterSpec, ThreadScaling) {
  const std::string line =
      "  threads: {count: 4, gemm_speedup: 3.5, element_speedup: 2.25, region_overhead: 2 us}\n";
  const std::string cpu = edited("  kind: gpu\n", "  kind: cpu\n");
  auto withThreads = [&](const std::string &threads) {
    std::string text = cpu;
    const std::string at = "  launch_overhead: 4 us\n";
    return text.replace(text.find(at), at.size(), at + threads);
  };
  ClusterSpec spec;
  rt::Status status = parseClusterSpecText(withThreads(line), "spec.yaml", spec);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_TRUE(spec.device.threads.has_value());
  EXPECT_EQ(spec.device.threads->count, 4u);
  EXPECT_DOUBLE_EQ(spec.device.threads->gemmSpeedup, 3.5);
  EXPECT_DOUBLE_EQ(spec.device.threads->elementSpeedup, 2.25);
  EXPECT_DOUBLE_EQ(spec.device.threads->regionOverhead, 2e-6);
  // Linear between one thread and count: 2 chunks of 4 threads get a third of the way.
  EXPECT_DOUBLE_EQ(spec.device.threads->speedup(3.5, 2), 1 + 2.5 / 3);
  EXPECT_DOUBLE_EQ(spec.device.threads->speedup(3.5, 4), 3.5);
  EXPECT_DOUBLE_EQ(spec.device.threads->speedup(3.5, 1), 1);
  expectWrittenBack(spec, line);
  ClusterSpec none;
  ASSERT_TRUE(parseClusterSpecText(cpu, "spec.yaml", none).ok());
  EXPECT_FALSE(none.device.threads.has_value());

  auto replaced = [&](const std::string &from, const std::string &to) {
    std::string threads = line;
    return withThreads(threads.replace(threads.find(from), from.size(), to));
  };
  EXPECT_EQ(errorOf(edited("  launch_overhead: 4 us\n", "  launch_overhead: 4 us\n" + line)),
            "spec.yaml:13: device.threads: only a cpu device has threads (its kernels' host "
            "threads)");
  EXPECT_EQ(errorOf(replaced("count: 4", "count: 1")),
            "spec.yaml:13: device.threads.count: '1': must be between 2 and 256 (one thread "
            "needs no scaling)");
  EXPECT_EQ(errorOf(replaced("gemm_speedup: 3.5", "gemm_speedup: 4.5")),
            "spec.yaml:13: device.threads.gemm_speedup: '4.5': must be at most 4");
  EXPECT_EQ(errorOf(replaced("element_speedup: 2.25", "element_speedup: 0")),
            "spec.yaml:13: device.threads.element_speedup: '0': must be positive");
  EXPECT_EQ(errorOf(replaced(", region_overhead: 2 us", "")),
            "spec.yaml:13: device.threads: missing required field 'region_overhead'");
  EXPECT_EQ(errorOf(replaced("count: 4", "cores: 4")),
            "spec.yaml:13: device.threads.cores: unknown field (expected one of count, "
            "gemm_speedup, element_speedup, region_overhead)");
}

// The optional GEMM efficiency by call size: read, interpolated in log(size) and clamped at
// the ends, written back exactly; malformed sizes and efficiencies are named.
TEST(ClusterSpec, GemmEfficiencyBySize) {
  const std::string line = "  gemm_efficiency_by_size: {4096: 0.5, 262144: 0.8, 16777216: 0.95}\n";
  auto with = [&](const std::string &sizes) {
    return edited("  efficiency: {gemm: 0.7, memory: 0.8}\n",
                  "  efficiency: {gemm: 0.7, memory: 0.8}\n" + sizes);
  };
  ClusterSpec spec;
  rt::Status status = parseClusterSpecText(with(line), "spec.yaml", spec);
  ASSERT_TRUE(status.ok()) << status.message();
  const DeviceSpec &d = spec.device;
  ASSERT_EQ(d.gemmEfficiencyBySize.size(), 3u);
  EXPECT_DOUBLE_EQ(d.gemmEfficiencyFor(100), 0.5);    // below the smallest: its efficiency
  EXPECT_DOUBLE_EQ(d.gemmEfficiencyFor(262144), 0.8);
  EXPECT_DOUBLE_EQ(d.gemmEfficiencyFor(32768), 0.65); // halfway in log(size)
  EXPECT_DOUBLE_EQ(d.gemmEfficiencyFor(1e12), 0.95);  // above the largest
  expectWrittenBack(spec, line);
  ClusterSpec none;
  ASSERT_TRUE(parseClusterSpecText(kSpec, "spec.yaml", none).ok());
  EXPECT_DOUBLE_EQ(none.device.gemmEfficiencyFor(1e6), 0.7); // efficiency.gemm for every size

  EXPECT_EQ(errorOf(with("  gemm_efficiency_by_size: {4096.5: 0.5}\n")),
            "spec.yaml:12: device.gemm_efficiency_by_size: '4096.5': expected a whole number of "
            "multiply-adds (1 to 1e18)");
  EXPECT_EQ(errorOf(with("  gemm_efficiency_by_size: {big: 0.5}\n")),
            "spec.yaml:12: device.gemm_efficiency_by_size: 'big': expected a whole number of "
            "multiply-adds (1 to 1e18)");
  EXPECT_EQ(errorOf(with("  gemm_efficiency_by_size: {4096: 1.5}\n")),
            "spec.yaml:12: device.gemm_efficiency_by_size.4096: '1.5': must be at most 1");
  EXPECT_EQ(errorOf(with("  gemm_efficiency_by_size: {4096: 0.5, 4096.0: 0.6}\n")),
            "spec.yaml:12: device.gemm_efficiency_by_size.4096.0: given twice");
  EXPECT_EQ(errorOf(with("  gemm_efficiency_by_size: 0.5\n")),
            "spec.yaml:12: device.gemm_efficiency_by_size: expected a mapping of multiply-adds "
            "per GEMM call to efficiencies ({262144: 0.9, ...})");
}

// A link's optional fit per collective kind.
TEST(ClusterSpec, PerCollectiveLinkFits) {
  const std::string text = edited(
      "  intra_node: {bandwidth: 450 GB/s, latency: 2 us}",
      "  intra_node: {bandwidth: 450 GB/s, latency: 2 us,\n"
      "      all_reduce: {bandwidth: 300 GB/s, latency: 3 us}}");
  ClusterSpec spec;
  rt::Status status = parseClusterSpecText(text, "spec.yaml", spec);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_TRUE(spec.intraNode->byKind[0]);
  EXPECT_DOUBLE_EQ(spec.intraNode->byKind[0]->bandwidth, 300e9);
  EXPECT_DOUBLE_EQ(spec.intraNode->byKind[0]->latency, 3e-6);
  EXPECT_FALSE(spec.intraNode->byKind[1]);
  EXPECT_FALSE(spec.interNode->byKind[2]);
  std::string written = writeClusterSpec(spec);
  ClusterSpec back;
  ASSERT_TRUE(parseClusterSpecText(written, "written.yaml", back).ok()) << written;
  EXPECT_EQ(writeClusterSpec(back), written);
  EXPECT_EQ(back.intraNode->byKind[0]->latency, 3e-6);

  std::string missing = text;
  missing.replace(missing.find("latency: 3 us"), 13, "");
  EXPECT_EQ(errorOf(missing), "spec.yaml:15: links.intra_node.all_reduce: missing required "
                              "field 'latency'");
}

TEST(ClusterSpec, WriteParsesBackExactly) {
  ClusterSpec spec;
  ASSERT_TRUE(parseClusterSpecText(kSpec, "spec.yaml", spec).ok());
  // Awkward values too: measured rates, a quote in a string, a byte count no unit divides.
  spec.source = "plait-calibrate on \"host\", 2026-11-29";
  spec.device.memoryBytes = 12345678901;
  spec.device.memoryBandwidth = 6.052e9;
  spec.device.peakFlops[size_t(Dtype::Fp8)] = 1.0 / 3 * 1e15;
  spec.device.launchOverhead = 177.5e-9;
  spec.intraNode->latency = 859.4e-9;
  std::string text = writeClusterSpec(spec);
  ClusterSpec back;
  rt::Status status = parseClusterSpecText(text, "written.yaml", back);
  ASSERT_TRUE(status.ok()) << status.message() << "\n" << text;
  EXPECT_EQ(writeClusterSpec(back), text);
  EXPECT_EQ(back.source, spec.source);
  EXPECT_EQ(back.device.memoryBytes, spec.device.memoryBytes);
  EXPECT_EQ(back.device.memoryBandwidth, spec.device.memoryBandwidth);
  EXPECT_EQ(back.device.peakFlops, spec.device.peakFlops);
  EXPECT_EQ(back.device.launchOverhead, spec.device.launchOverhead);
  EXPECT_EQ(back.intraNode->latency, spec.intraNode->latency);
  EXPECT_EQ(back.interNode->bandwidth, spec.interNode->bandwidth);
  EXPECT_EQ(*back.pricePerDeviceHour, *spec.pricePerDeviceHour);
  EXPECT_NE(text.find("  memory_bandwidth: 6.052 GB/s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  launch_overhead: 177.5 ns\n"), std::string::npos) << text;
}

// Every shipped spec parses, is named after its file, and has the shape its name says
// (NAME-N: one node of N devices; NAME-NxM: M nodes of N).
TEST(ClusterSpec, EveryShippedSpecParses) {
  int count = 0;
  for (const auto &entry : std::filesystem::directory_iterator(PLAIT_CLUSTERS_DIR)) {
    if (entry.path().extension() != ".yaml")
      continue;
    ++count;
    ClusterSpec spec;
    rt::Status status = parseClusterSpec(entry.path().string(), spec);
    ASSERT_TRUE(status.ok()) << status.message();
    std::string stem = entry.path().stem().string();
    EXPECT_EQ(spec.name, stem);
    std::smatch shape;
    if (std::regex_match(stem, shape, std::regex(R"(.*-(\d+)(?:x(\d+))?)"))) {
      EXPECT_EQ(spec.devicesPerNode, std::stoul(shape[1])) << stem;
      EXPECT_EQ(spec.nodes, shape[2].matched ? std::stoul(shape[2]) : 1ul) << stem;
    }
    EXPECT_EQ(writeClusterSpec(spec).empty(), false);
    ClusterSpec back;
    ASSERT_TRUE(parseClusterSpecText(writeClusterSpec(spec), stem, back).ok()) << stem;
    EXPECT_EQ(writeClusterSpec(back), writeClusterSpec(spec)) << stem;
  }
  EXPECT_GE(count, 15);
}

} // namespace
} // namespace plait::cluster
