// Sharded checkpoints (Checkpoint.h): what each rank holds, in the logical coordinates of a
// world-1 run, so that any placement can be written and any other restored from it.
#include "runtime/Checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/io/Safetensors.h"
#include "runtime/io/TensorFile.h"

namespace plait::rt {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr int kFormatVersion = 1;
constexpr const char *kFormat = "plait-checkpoint";

std::string stepDirName(int64_t step) { return fmt::format("step-{:08d}", step); }
std::string rankFileName(uint32_t rank) { return fmt::format("rank-{:05d}.safetensors", rank); }

uint32_t crc32Of(const uint8_t *data, size_t size) {
  return uint32_t(crc32_z(crc32_z(0L, Z_NULL, 0), data, size));
}
uint32_t crc32Of(const std::string &bytes) {
  return crc32Of(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
}

// A metadata field that is present but not what the format says: named in the error.
struct FieldError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `value` as an integer of type T: a JSON integer within T's range, never a float or other
// JSON type (nlohmann's get<T>() would convert 1e300 to an integer, which is undefined).
template <typename T>
T integerOf(const ojson &value, const char *field) {
  bool fits = false;
  if (value.is_number_unsigned())
    fits = value.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max());
  else if (value.is_number_integer())
    fits = value.get<int64_t>() >= int64_t(std::numeric_limits<T>::min());
  if (!fits)
    throw FieldError(fmt::format("'{}' must be an integer in [{}, {}]", field,
                                 std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  return value.get<T>();
}
template <typename T>
T integerAt(const ojson &object, const char *field) {
  return integerOf<T>(object.at(field), field);
}

// The published checkpoints' directory names (step-N, zero-padded), oldest first.
std::vector<std::string> stepDirs(const std::string &dir) {
  std::vector<std::string> steps;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) == 0 && entry.is_directory())
      steps.push_back(name);
  }
  std::sort(steps.begin(), steps.end()); // zero-padded: lexical order is step order
  return steps;
}

// Flushes a file's or directory's contents to disk, so that a rename published after it
// never points at data still in the page cache when the machine dies.
Status syncPath(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    return Status::errorf("{}: cannot open to sync: {}", path, std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0)
    return Status::errorf("{}: fsync failed: {}", path, std::strerror(err));
  return {};
}

Status writeDurably(const std::string &path, const std::string &text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Status::errorf("{}: cannot open for writing", tmp);
    out << text;
    if (!out.flush())
      return Status::errorf("{}: write error", tmp);
  }
  PLAIT_RETURN_IF_ERROR(syncPath(tmp));
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    return Status::errorf("{}: {}", path, ec.message());
  return {};
}

// Where a rank's copy of a param or state sits in the logical tensors: one segment for a
// whole tensor, one per overlapped piece for a shard.
struct LocalSegment {
  std::string logical;
  const std::vector<int64_t> *shape; // the logical tensor's shape
  uint64_t start, count;             // logical elements
  uint64_t offset;                   // element offset in the rank's tensor
};

std::vector<LocalSegment> localSegments(const PlanTensor &t, uint32_t rank) {
  std::vector<LocalSegment> out;
  if (!t.sharded) {
    out.push_back({t.name, &t.shape, 0, uint64_t(t.numel()), 0});
    return out;
  }
  uint32_t group = 0, index = 0;
  if (!t.shard.groups.locate(rank, group, index))
    return out;
  uint64_t first = uint64_t(index) * uint64_t(t.numel()), last = first + uint64_t(t.numel());
  for (const ShardPiece &p : t.shard.pieces) {
    uint64_t lo = std::max(first, p.offset), hi = std::min(last, p.offset + p.numel);
    if (lo < hi)
      out.push_back({p.name, &p.shape, lo - p.offset, hi - lo, lo - first});
  }
  return out;
}

// Replicated tensors are written once (rank 0); a shard by the members of its first group.
bool writesTensor(const PlanTensor &t, uint32_t rank) {
  if (!t.sharded)
    return rank == 0;
  uint32_t group = 0, index = 0;
  return t.shard.groups.locate(rank, group, index) && group == 0;
}

const char *kindName(const PlanTensor &t) {
  return t.kind == TensorKind::Param ? "param" : "state";
}

// All ranks learn how many of them failed (a sum over the world); doubles as a barrier.
Status agree(Communicator &comm, const Status &mine, const std::string &what) {
  int64_t failed = mine.ok() ? 0 : 1, total = 0;
  PLAIT_RETURN_IF_ERROR(sumOverWorld(comm, &failed, &total, 1));
  if (!mine.ok())
    return mine;
  if (total > 0)
    return Status::errorf("{}: {} other rank{} failed", what, total, total == 1 ? "" : "s");
  return {};
}

// This rank's file, if it writes anything: the tensors it holds under their plan names.
Status writeRankFile(const std::string &path, const TensorStore &store, uint32_t rank,
                     uint64_t &bytes, uint32_t &crc) {
  const Plan &plan = store.plan();
  std::vector<std::pair<std::string, TensorView>> entries;
  for (uint32_t t = 0; t < plan.tensors.size(); ++t)
    if (isPersistent(plan.tensors[t]) && writesTensor(plan.tensors[t], rank))
      entries.emplace_back(plan.tensors[t].name, store.view(t));
  bytes = 0;
  crc = 0;
  if (entries.empty())
    return {};
  PLAIT_RETURN_IF_ERROR(writeSafetensors(path, entries));
  PLAIT_RETURN_IF_ERROR(syncPath(path));
  std::string written; // read back: the checksum is of what is on disk
  PLAIT_RETURN_IF_ERROR(readFileBytes(path, written));
  bytes = written.size();
  crc = crc32Of(written);
  return {};
}

} // namespace

std::vector<std::string> planUpdates(const Plan &plan) {
  std::set<std::string> names;
  for (const PlanInstr &instr : plan.instrs) {
    std::string_view kernel = plan.kernels[instr.kernel];
    if (kernel == "grouped_update")
      names.insert(std::string(instr.attrs.getStrView("update", "")));
    else if (kernel.size() > 7 && kernel.substr(kernel.size() - 7) == "_update")
      names.insert(std::string(kernel));
  }
  return {names.begin(), names.end()};
}

namespace {

// A double as JSON holds it (shortest round trip), and the non-finite ones, which JSON has
// no numbers for, as the strings "inf", "-inf" and "nan".
ojson doubleJson(double v) {
  if (std::isfinite(v))
    return v;
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

double doubleAt(const ojson &object, const char *field) {
  const ojson &v = object.at(field);
  if (v.is_number())
    return v.get<double>();
  if (v == "inf")
    return std::numeric_limits<double>::infinity();
  if (v == "-inf")
    return -std::numeric_limits<double>::infinity();
  if (v == "nan")
    return std::numeric_limits<double>::quiet_NaN();
  throw FieldError(fmt::format("'{}' must be a number, \"inf\", \"-inf\" or \"nan\"", field));
}

ojson plateauJson(const PlateauState &p) {
  return {{"lr", p.lr},
          {"last_lr", p.lastLr},
          {"best", doubleJson(p.best)},
          {"bad_windows", p.badWindows},
          {"cooldown_left", p.cooldownLeft},
          {"windows", p.windows},
          {"reductions", p.reductions},
          {"window_sum", doubleJson(p.windowSum)},
          {"window_steps", p.windowSteps}};
}

PlateauState plateauAt(const ojson &body) {
  const ojson &j = body.at("lr_plateau");
  if (!j.is_object())
    throw FieldError("'lr_plateau' must be an object");
  PlateauState p;
  p.lr = doubleAt(j, "lr");
  p.lastLr = doubleAt(j, "last_lr");
  p.best = doubleAt(j, "best");
  p.badWindows = integerAt<int64_t>(j, "bad_windows");
  p.cooldownLeft = integerAt<int64_t>(j, "cooldown_left");
  p.windows = integerAt<int64_t>(j, "windows");
  p.reductions = integerAt<int64_t>(j, "reductions");
  p.windowSum = doubleAt(j, "window_sum");
  p.windowSteps = integerAt<int64_t>(j, "window_steps");
  if (std::string why = LrController::invalid(p); !why.empty())
    throw FieldError("'lr_plateau': " + why);
  return p;
}

// The metadata body: computable by rank 0 alone, since every rank runs the same plan.
ojson metadataBody(const Plan &plan, const CheckpointInfo &info,
                   const std::vector<uint64_t> &bytes, const std::vector<uint32_t> &crcs) {
  ojson body;
  body["format"] = kFormat;
  body["version"] = kFormatVersion;
  body["step"] = info.step;
  body["world_size"] = plan.worldSize;
  body["global_batch"] = info.globalBatch;
  body["samples_seen"] = info.samplesSeen;
  if (info.dataPosition >= 0)
    body["data_position"] = info.dataPosition;
  if (info.dataEpoch >= 0)
    body["data_epoch"] = info.dataEpoch;
  if (info.shuffleSeed >= 0)
    body["shuffle_seed"] = info.shuffleSeed;
  body["seed"] = info.seed;
  if (info.plateau)
    body["lr_plateau"] = plateauJson(*info.plateau);
  body["model"] = plan.source;
  body["optimizer_updates"] = planUpdates(plan);
  ojson tensors = ojson::object();
  for (const PlanTensor &t : plan.tensors) {
    if (!isPersistent(t))
      continue;
    auto describe = [&](const std::string &name, const std::vector<int64_t> &shape) {
      tensors[name] = {{"kind", kindName(t)}, {"dtype", dtypeName(t.dtype)}, {"shape", shape}};
    };
    if (!t.sharded)
      describe(t.name, t.shape);
    else
      for (const ShardPiece &p : t.shard.pieces)
        describe(p.name, p.shape);
  }
  body["tensors"] = tensors;
  ojson files = ojson::array();
  for (uint32_t rank = 0; rank < plan.worldSize; ++rank) {
    if (bytes[rank] == 0)
      continue;
    ojson entries = ojson::array();
    for (const PlanTensor &t : plan.tensors) {
      if (!isPersistent(t) || !writesTensor(t, rank))
        continue;
      ojson entry = {{"key", t.name}};
      if (t.sharded) {
        uint32_t group = 0, index = 0;
        t.shard.groups.locate(rank, group, index);
        entry["shard"] = {{"unit", t.shard.unit},
                          {"group_size", t.shard.groups.groupSize},
                          {"index", index},
                          {"padded_numel", t.shard.paddedNumel}};
      }
      ojson segments = ojson::array();
      for (const LocalSegment &s : localSegments(t, rank))
        segments.push_back({{"tensor", s.logical},
                            {"start", s.start},
                            {"count", s.count},
                            {"offset", s.offset}});
      entry["segments"] = segments;
      entries.push_back(entry);
    }
    files.push_back({{"file", rankFileName(rank)},
                     {"rank", rank},
                     {"bytes", bytes[rank]},
                     {"crc32", crcs[rank]},
                     {"entries", entries}});
  }
  body["files"] = files;
  return body;
}

// Keeps the `keep` newest published checkpoints.
void pruneCheckpoints(const std::string &dir, int keep) {
  std::vector<std::string> steps = stepDirs(dir);
  std::error_code ec;
  for (size_t i = 0; i + size_t(std::max(keep, 1)) < steps.size(); ++i)
    fs::remove_all(fs::path(dir) / steps[i], ec);
}

} // namespace

int64_t CheckpointTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Status saveCheckpoint(const std::string &dir, const CheckpointInfo &info, const TensorStore &store,
                      Communicator &comm, int keep) {
  const Plan &plan = store.plan();
  const uint32_t rank = comm.rank(), world = comm.size();
  const std::string what = fmt::format("checkpoint of step {} in {}", info.step, dir);
  const std::string name = stepDirName(info.step);
  const std::string tmp = (fs::path(dir) / ("." + name + ".tmp")).string();
  const std::string final = (fs::path(dir) / name).string();

  Status made;
  if (rank == 0) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    fs::remove_all(tmp, ec);
    if (!fs::create_directory(tmp, ec) || ec)
      made = Status::errorf("{}: cannot create {}{}", what, tmp, ec ? ": " + ec.message() : "");
  }
  PLAIT_RETURN_IF_ERROR(agree(comm, made, what));

  // Every rank's file size and checksum, summed over the world (each fills its own slot).
  std::vector<int64_t> mine(2 * world + 1, 0), sums(2 * world + 1, 0);
  uint64_t bytes = 0;
  uint32_t crc = 0;
  Status wrote =
      writeRankFile((fs::path(tmp) / rankFileName(rank)).string(), store, rank, bytes, crc);
  mine[rank] = int64_t(bytes);
  mine[world + rank] = int64_t(crc);
  mine[2 * world] = wrote.ok() ? 0 : 1;
  PLAIT_RETURN_IF_ERROR(sumOverWorld(comm, mine.data(), sums.data(), mine.size()));
  if (!wrote.ok())
    return wrote;
  if (sums[2 * world] > 0)
    return Status::errorf("{}: {} other rank(s) could not write their file", what,
                          sums[2 * world]);

  Status published;
  if (rank == 0) {
    std::vector<uint64_t> sizes(world);
    std::vector<uint32_t> crcs(world);
    for (uint32_t r = 0; r < world; ++r) {
      sizes[r] = uint64_t(sums[r]);
      crcs[r] = uint32_t(sums[world + r]);
    }
    ojson body = metadataBody(plan, info, sizes, crcs);
    ojson meta = {{"crc32", crc32Of(body.dump())}, {"body", body}};
    published = writeDurably((fs::path(tmp) / "meta.json").string(), meta.dump(1) + "\n");
    if (published.ok())
      published = syncPath(tmp);
    std::error_code ec;
    if (published.ok()) {
      fs::remove_all(final, ec); // a stale one of the same step, from an earlier run
      fs::rename(tmp, final, ec);
      if (ec)
        published = Status::errorf("{}: cannot rename {} to {}: {}", what, tmp, final,
                                   ec.message());
    }
    if (published.ok())
      published = writeDurably((fs::path(dir) / "latest").string(), name + "\n");
    if (published.ok())
      published = syncPath(dir);
    if (published.ok())
      pruneCheckpoints(dir, keep);
  }
  return agree(comm, published, what);
}

Status parseCheckpointMetadata(const uint8_t *data, size_t size, const std::string &path,
                               CheckpointIndex &out, bool checkCrc) {
  out = CheckpointIndex{};
  out.path = path;
  std::string metaPath = (fs::path(path) / "meta.json").string();
  ojson meta = ojson::parse(data, data + size, nullptr, false);
  if (meta.is_discarded() || !meta.is_object() || !meta.contains("body") ||
      !meta["body"].is_object() || !meta.contains("crc32") || !meta["crc32"].is_number_unsigned())
    return Status::errorf("{}: not checkpoint metadata (truncated or damaged JSON)", metaPath);
  const ojson &body = meta["body"];
  uint32_t crc = crc32Of(body.dump());
  if (checkCrc && crc != meta["crc32"].get<uint64_t>())
    return Status::errorf("{}: checksum mismatch (damaged metadata)", metaPath);
  try {
    if (body.at("format") != kFormat || body.at("version") != kFormatVersion)
      return Status::errorf("{}: format {} version {}, this runtime reads {} version {}",
                            metaPath, body.at("format").dump(), body.at("version").dump(),
                            kFormat, kFormatVersion);
    out.info.step = integerAt<int64_t>(body, "step");
    out.info.globalBatch = integerAt<int64_t>(body, "global_batch");
    // Older checkpoints: samples_seen was step * global_batch, and there is no position.
    out.info.samplesSeen = body.contains("samples_seen")
                               ? integerAt<int64_t>(body, "samples_seen")
                               : out.info.step * out.info.globalBatch;
    out.info.dataPosition =
        body.contains("data_position") ? integerAt<int64_t>(body, "data_position") : -1;
    if (out.info.samplesSeen < 0)
      throw FieldError("'samples_seen' must be >= 0");
    if (body.contains("data_position") && out.info.dataPosition < 0)
      throw FieldError("'data_position' must be >= 0");
    out.info.dataEpoch =
        body.contains("data_epoch") ? integerAt<int64_t>(body, "data_epoch") : -1;
    if (body.contains("data_epoch") && out.info.dataEpoch < 0)
      throw FieldError("'data_epoch' must be >= 0");
    out.info.shuffleSeed =
        body.contains("shuffle_seed") ? integerAt<int64_t>(body, "shuffle_seed") : -1;
    if (body.contains("shuffle_seed") && out.info.shuffleSeed < 0)
      throw FieldError("'shuffle_seed' must be >= 0");
    out.info.seed = integerAt<uint64_t>(body, "seed");
    if (body.contains("lr_plateau"))
      out.info.plateau = plateauAt(body);
    out.worldSize = integerAt<uint32_t>(body, "world_size");
    out.model = body.at("model").get<std::string>();
    if (body.contains("optimizer_updates")) { // absent in older checkpoints
      if (!body["optimizer_updates"].is_array())
        throw FieldError("'optimizer_updates' must be an array of strings");
      for (const auto &u : body["optimizer_updates"]) {
        if (!u.is_string())
          throw FieldError("'optimizer_updates' must be an array of strings");
        out.updates.push_back(u.get<std::string>());
      }
    }
    for (const auto &[name, t] : body.at("tensors").items()) {
      CheckpointTensor &ct = out.tensors[name];
      ct.kind = t.at("kind").get<std::string>();
      if (ct.kind != "param" && ct.kind != "state")
        return Status::errorf("{}: tensor '{}': kind '{}' is neither param nor state",
                              metaPath, printable(name), printable(ct.kind));
      std::string dtype = t.at("dtype").get<std::string>();
      if (!parseDTypeName(dtype, ct.dtype))
        return Status::errorf("{}: tensor '{}': unknown dtype '{}'", metaPath, printable(name),
                              printable(dtype));
      if (!t.at("shape").is_array())
        throw FieldError("'shape' must be an array of integers");
      for (const auto &d : t.at("shape"))
        ct.shape.push_back(integerOf<int64_t>(d, "shape"));
      uint64_t numel = 1;
      for (int64_t d : ct.shape)
        if (d < 0 || __builtin_mul_overflow(numel, uint64_t(d), &numel) ||
            numel > (uint64_t(1) << 48))
          return Status::errorf("{}: tensor '{}': bad shape {}", metaPath, printable(name),
                                shapeString(ct.shape));
    }
    for (const auto &file : body.at("files")) {
      std::string fileName = file.at("file").get<std::string>();
      if (fileName.find('/') != std::string::npos || fileName.empty() || fileName[0] == '.')
        return Status::errorf("{}: file name '{}' is not a plain name", metaPath,
                              printable(fileName));
      uint32_t index = uint32_t(out.files.size());
      out.files.push_back({(fs::path(path) / fileName).string(), integerAt<uint64_t>(file, "bytes"),
                           integerAt<uint32_t>(file, "crc32")});
      for (const auto &entry : file.at("entries"))
        for (const auto &s : entry.at("segments")) {
          std::string logical = s.at("tensor").get<std::string>();
          auto it = out.tensors.find(logical);
          if (it == out.tensors.end())
            return Status::errorf("{}: a segment of unknown tensor '{}'", metaPath,
                                  printable(logical));
          CheckpointTensor::Segment seg{index, entry.at("key").get<std::string>(),
                                        integerAt<uint64_t>(s, "start"),
                                        integerAt<uint64_t>(s, "count"),
                                        integerAt<uint64_t>(s, "offset")};
          uint64_t end = 0, last = 0;
          if (__builtin_add_overflow(seg.start, seg.count, &end) ||
              end > uint64_t(it->second.numel()) ||
              __builtin_add_overflow(seg.offset, seg.count, &last) || last > (uint64_t(1) << 48))
            return Status::errorf("{}: a segment of '{}' lies outside its {} elements",
                                  metaPath, printable(logical), it->second.numel());
          it->second.segments.push_back(std::move(seg));
        }
    }
  } catch (const nlohmann::json::exception &e) {
    return Status::errorf("{}: malformed checkpoint metadata: {}", metaPath, e.what());
  } catch (const FieldError &e) {
    return Status::errorf("{}: malformed checkpoint metadata: {}", metaPath, e.what());
  }
  for (auto &[name, t] : out.tensors)
    std::sort(t.segments.begin(), t.segments.end(),
              [](const auto &a, const auto &b) { return a.start < b.start; });
  return {};
}

Status readCheckpoint(const std::string &path, CheckpointIndex &out) {
  std::string meta;
  PLAIT_RETURN_IF_ERROR(readFileBytes((fs::path(path) / "meta.json").string(), meta));
  PLAIT_RETURN_IF_ERROR(parseCheckpointMetadata(reinterpret_cast<const uint8_t *>(meta.data()),
                                                meta.size(), path, out));
  for (CheckpointFile &file : out.files) {
    PLAIT_RETURN_IF_ERROR(readFileBytes(file.path, file.contents));
    if (file.contents.size() != file.bytes)
      return Status::errorf("{}: {} bytes, the metadata says {} (truncated?)", file.path,
                            file.contents.size(), file.bytes);
    if (crc32Of(file.contents) != file.crc32)
      return Status::errorf("{}: checksum mismatch (damaged file)", file.path);
  }
  return {};
}

bool hasCheckpoint(const std::string &dir) {
  std::error_code ec;
  for (const std::string &name : stepDirs(dir))
    if (fs::exists(fs::path(dir) / name / "meta.json", ec))
      return true;
  return false;
}

Status findCheckpoint(const std::string &dir, CheckpointIndex &out,
                      std::vector<std::string> &skipped) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::errorf("{} is not a directory of checkpoints", dir);
  std::vector<std::string> candidates;
  std::ifstream latest(fs::path(dir) / "latest");
  std::string named;
  if (latest && std::getline(latest, named) && named.rfind("step-", 0) == 0 &&
      named.find('/') == std::string::npos)
    candidates.push_back(named);
  std::vector<std::string> steps = stepDirs(dir);
  for (auto s = steps.rbegin(); s != steps.rend(); ++s) // newest first
    if (*s != named)
      candidates.push_back(*s);
  for (const std::string &name : candidates) {
    Status s = readCheckpoint((fs::path(dir) / name).string(), out);
    if (s.ok())
      return {};
    skipped.push_back(s.message());
  }
  return Status::errorf("no usable checkpoint in {}{}", dir,
                        skipped.empty() ? "" : " (" + skipped.front() + ")");
}

namespace {

// Lazily parsed checkpoint files, for restoring: from the bytes readCheckpoint verified, so
// no file is read twice.
class FileCache {
public:
  explicit FileCache(const CheckpointIndex &index) : index_(index) {}
  Status entry(uint32_t file, const std::string &key, const HostTensor *&out) {
    auto &entries = parsed_[file];
    if (entries.empty())
      PLAIT_RETURN_IF_ERROR(parseSafetensors(
          reinterpret_cast<const uint8_t *>(index_.files[file].contents.data()),
          index_.files[file].contents.size(), index_.files[file].path, entries));
    for (const auto &[name, tensor] : entries)
      if (name == key) {
        out = &tensor;
        return {};
      }
    return Status::errorf("{}: has no entry '{}' the metadata lists", index_.files[file].path,
                          printable(key));
  }

private:
  const CheckpointIndex &index_;
  std::map<uint32_t, std::vector<std::pair<std::string, HostTensor>>> parsed_;
};

// Copies logical elements [start, start + count) of `name` into `dst`.
Status copyLogical(const CheckpointIndex &index, FileCache &files, const std::string &name,
                   uint64_t start, uint64_t count, uint8_t *dst) {
  const CheckpointTensor &t = index.tensors.at(name);
  size_t element = dtypeSize(t.dtype);
  uint64_t next = start, end = start + count;
  for (const CheckpointTensor::Segment &s : t.segments) {
    uint64_t lo = std::max(next, s.start), hi = std::min(end, s.start + s.count);
    if (lo != next || lo >= hi)
      continue;
    const HostTensor *stored = nullptr;
    PLAIT_RETURN_IF_ERROR(files.entry(s.file, s.key, stored));
    uint64_t from = s.offset + (lo - s.start);
    if (stored->dtype != t.dtype || (from + (hi - lo)) * element > stored->bytes.size())
      return Status::errorf("{}: entry '{}' is smaller than its segments of '{}' say",
                            index.files[s.file].path, printable(s.key), printable(name));
    std::memcpy(dst + (lo - start) * element, stored->bytes.data() + from * element,
                (hi - lo) * element);
    next = hi;
    if (next == end)
      return {};
  }
  return Status::errorf("{}: elements [{}, {}) of '{}' are stored in no file", index.path, next,
                        end, printable(name));
}

/// Another optimizer whose states share names (Adam's moments and NAdam's, say) would load
/// silently and carry on from state the plan's rule never wrote: refused when both the
/// checkpoint and the plan name their updates.
Status checkSameOptimizer(const CheckpointIndex &index, const Plan &plan) {
  std::vector<std::string> updates = planUpdates(plan);
  if (index.updates.empty() || updates.empty() || index.updates == updates)
    return {};
  auto list = [](const std::vector<std::string> &v) {
    std::string out;
    for (const std::string &u : v)
      out += (out.empty() ? "" : ", ") + printable(u);
    return out;
  };
  return Status::errorf("{}: saved by a plan whose optimizer runs {}, but {} runs {}; resume "
                        "with the optimizer the run was trained with",
                        index.path, list(index.updates), plan.path, list(updates));
}

} // namespace

Status restoreCheckpoint(const CheckpointIndex &index, const TensorStore &store) {
  const Plan &plan = store.plan();
  FileCache files(index);
  // Params first: a checkpoint of another model is named by a missing param, not a state.
  for (TensorKind kind : {TensorKind::Param, TensorKind::State}) {
    if (kind == TensorKind::State) // after the params, so another model names a param
      PLAIT_RETURN_IF_ERROR(checkSameOptimizer(index, plan));
    for (uint32_t t = 0; t < plan.tensors.size(); ++t) {
      const PlanTensor &tensor = plan.tensors[t];
      if (tensor.kind != kind)
        continue;
      uint8_t *base = static_cast<uint8_t *>(store.view(t).data);
      for (const LocalSegment &s : localSegments(tensor, store.rank())) {
        auto it = index.tensors.find(s.logical);
        // A weight EMA (--ema-decay) that the saving run did not keep starts from the params
        // it saved, as an EMA added to a model copies it.
        if (it == index.tensors.end() && kind == TensorKind::State &&
            !averagedParam(s.logical).empty())
          it = index.tensors.find(averagedParam(s.logical));
        if (it == index.tensors.end())
          return Status::errorf("{}: has no {} '{}' (the plan's {} tensor {}); was it saved "
                                "from another model or optimizer?", index.path,
                                kindName(tensor), s.logical, plan.path, t);
        if (it->second.shape != *s.shape || it->second.dtype != tensor.dtype)
          return Status::errorf("{}: '{}' is {} {}, the plan {} has {} {}", index.path,
                                s.logical, dtypeName(it->second.dtype),
                                shapeString(it->second.shape), plan.path,
                                dtypeName(tensor.dtype), shapeString(*s.shape));
        PLAIT_RETURN_IF_ERROR(copyLogical(index, files, it->first, s.start, s.count,
                                          base + s.offset * dtypeSize(tensor.dtype)));
      }
    }
  }
  return {};
}

Status assembleCheckpointTensor(const CheckpointIndex &index, const std::string &name,
                                HostTensor &out) {
  auto it = index.tensors.find(name);
  if (it == index.tensors.end())
    return Status::errorf("{}: has no tensor '{}'", index.path, printable(name));
  out.dtype = it->second.dtype;
  out.shape = it->second.shape;
  out.bytes.assign(size_t(it->second.numel()) * dtypeSize(out.dtype), 0);
  FileCache files(index);
  if (it->second.numel() == 0)
    return {};
  return copyLogical(index, files, name, 0, uint64_t(it->second.numel()), out.bytes.data());
}

} // namespace plait::rt
