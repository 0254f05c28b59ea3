// The ring (alpha-beta) model of collectives that cluster specs' links are stated in: the
// time a collective should take on a Link, and fitting a Link to measured times.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/cluster/ClusterSpec.h"

namespace plait::cluster {

enum class Collective { AllReduce, AllGather, ReduceScatter };

std::string_view collectiveName(Collective collective); // "all_reduce", ...

/// Ring steps (messages each device sends in sequence) of `collective` over `ranks` devices:
/// 2(p-1) for all-reduce, p-1 for all-gather and reduce-scatter.
uint32_t ringSteps(Collective collective, uint32_t ranks);

/// The bus-bandwidth factor: bytes each device sends per byte of the full buffer,
/// 2(p-1)/p for all-reduce, (p-1)/p for all-gather and reduce-scatter.
double ringFactor(Collective collective, uint32_t ranks);

/// steps·latency + factor·bytes/bandwidth: the time of `collective` over `ranks` devices on
/// `link` for a full buffer of `bytes` (the all-reduced buffer, the gathered result, the
/// buffer before scattering). 0 for one rank.
double ringTime(const Link &link, Collective collective, uint32_t ranks, double bytes);

/// The tree form of all-reduce (a binary-tree reduce, then a broadcast down the same tree,
/// pipelined): 2·ceil(log2 p)·latency + 2·bytes/bandwidth. Fewer latency steps than the ring,
/// twice the ring's bytes on the wire in the large-message limit. 0 for one rank.
double treeAllReduceTime(const Link &link, uint32_t ranks, double bytes);

/// One measured collective: its kind, ranks, full buffer bytes and time (seconds).
struct CollectiveSample {
  Collective collective;
  uint32_t ranks;
  uint64_t bytes;
  double seconds;
};

/// The Link whose ringTime fits `samples` best in relative error (weighted least squares, so
/// small messages decide the latency and large ones the bandwidth). When noise makes the
/// fit's latency or bandwidth non-positive, the latency comes from the smallest message and
/// the bandwidth from the largest instead. Requires samples with ranks > 1 and seconds > 0.
Link fitRing(const std::vector<CollectiveSample> &samples);

} // namespace plait::cluster
