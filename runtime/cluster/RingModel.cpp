// Ring-model collective times and the least-squares fit of a link to measurements.
#include "runtime/cluster/RingModel.h"

#include <algorithm>
#include <cmath>

namespace plait::cluster {

std::string_view collectiveName(Collective collective) {
  switch (collective) {
  case Collective::AllReduce:
    return "all_reduce";
  case Collective::AllGather:
    return "all_gather";
  case Collective::ReduceScatter:
    return "reduce_scatter";
  }
  return "?";
}

uint32_t ringSteps(Collective collective, uint32_t ranks) {
  uint32_t hops = ranks > 1 ? ranks - 1 : 0;
  return collective == Collective::AllReduce ? 2 * hops : hops;
}

double ringFactor(Collective collective, uint32_t ranks) {
  if (ranks <= 1)
    return 0;
  return double(ringSteps(collective, ranks)) / double(ranks);
}

double ringTime(const Link &link, Collective collective, uint32_t ranks, double bytes) {
  if (ranks <= 1)
    return 0;
  return ringSteps(collective, ranks) * link.latency +
         ringFactor(collective, ranks) * bytes / link.bandwidth;
}

double treeAllReduceTime(const Link &link, uint32_t ranks, double bytes) {
  if (ranks <= 1)
    return 0;
  double depth = std::ceil(std::log2(double(ranks)));
  return 2 * depth * link.latency + 2 * bytes / link.bandwidth;
}

Link fitRing(const std::vector<CollectiveSample> &samples) {
  if (samples.empty())
    return {};
  // t = steps·alpha + wire·invBandwidth, each row divided by t: minimises relative error.
  double saa = 0, sab = 0, sbb = 0, sa = 0, sb = 0;
  for (const CollectiveSample &s : samples) {
    double a = ringSteps(s.collective, s.ranks) / s.seconds;
    double b = ringFactor(s.collective, s.ranks) * double(s.bytes) / s.seconds;
    saa += a * a;
    sab += a * b;
    sbb += b * b;
    sa += a;
    sb += b;
  }
  double det = saa * sbb - sab * sab;
  Link link;
  if (det > 0) {
    double alpha = (sa * sbb - sb * sab) / det;
    double invBandwidth = (saa * sb - sab * sa) / det;
    if (alpha > 0 && invBandwidth > 0)
      return Link{1.0 / invBandwidth, alpha};
  }
  // Noisy measurements: the smallest message's time is nearly all latency, the largest's
  // nearly all bandwidth.
  auto bySize = [](const CollectiveSample &x, const CollectiveSample &y) {
    return x.bytes < y.bytes;
  };
  const CollectiveSample &small = *std::min_element(samples.begin(), samples.end(), bySize);
  const CollectiveSample &large = *std::max_element(samples.begin(), samples.end(), bySize);
  link.latency = small.seconds / std::max<uint32_t>(1, ringSteps(small.collective, small.ranks));
  double wireSeconds = large.seconds - ringSteps(large.collective, large.ranks) * link.latency;
  if (wireSeconds <= 0)
    wireSeconds = large.seconds;
  link.bandwidth = ringFactor(large.collective, large.ranks) * double(large.bytes) / wireSeconds;
  return link;
}

} // namespace plait::cluster
