// libFuzzer target: bytes as a cluster spec (plait-compile --cluster, plait-calibrate's
// output) through parseClusterSpecText. The contract: a spec, or one line naming the file;
// and a spec that parses is written back (writeClusterSpec) to text that parses to a spec
// written the same way again, as plait-calibrate's specs are read back.
#include <cstdint>
#include <string>

#include "runtime/cluster/ClusterSpec.h"
#include "tests/fuzz/FuzzChecks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string name = "cluster.yaml";
  const std::string text(reinterpret_cast<const char *>(data), size);
  plait::cluster::ClusterSpec spec;
  plait::rt::Status status = plait::cluster::parseClusterSpecText(text, name, spec);
  if (!status.ok()) {
    plait::fuzz::expectOneLineError(status.message(), name);
    return 0;
  }
  const std::string written = plait::cluster::writeClusterSpec(spec);
  plait::cluster::ClusterSpec again;
  status = plait::cluster::parseClusterSpecText(written, name, again);
  if (!status.ok())
    plait::fuzz::finding("a spec that parsed was written as text that does not parse:",
                         status.message() + "\n--- written:\n" + written);
  const std::string rewritten = plait::cluster::writeClusterSpec(again);
  if (rewritten != written)
    plait::fuzz::finding("a written spec does not read back as itself:",
                         "--- written:\n" + written + "--- read back and written again:\n" +
                             rewritten);
  return 0;
}
