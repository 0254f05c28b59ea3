// Plan loading in four gates: file size and identifier, the FlatBuffers Verifier (before any
// field is read), the format version, then semantic checks while decoding into rt::Plan.
#include "runtime/PlanLoader.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "codegen/schema/PlanChecksum.h"
#include "codegen/schema/PlanVersion.h"
#include "codegen/schema/plan_generated.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt {

namespace {

static_assert(FLATBUFFERS_LITTLEENDIAN, "plan files are little-endian; so must the host be");

// The Verifier (2.0.8) only checks that a vector's length word is 4-byte aligned, so a
// crafted file can hold 8-byte elements at a 4-byte boundary: copy them out bytewise
// instead of loading them as (misaligned) int64_t/double.
template <typename T> std::vector<T> copyScalars(const flatbuffers::Vector<T> *v) {
  std::vector<T> out;
  if (v && v->size() != 0) {
    out.resize(v->size());
    std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  }
  return out;
}

/// Decodes a verified plan, checking what the Verifier cannot: indices, sizes, names.
class PlanDecoder {
public:
  PlanDecoder(const fb::Plan &root, Plan &out) : root_(root), out_(out) {}

  Status decode() {
    PLAIT_RETURN_IF_ERROR(decodeHeader());
    PLAIT_RETURN_IF_ERROR(decodeKernels());
    PLAIT_RETURN_IF_ERROR(decodeBuffers());
    for (uint32_t i = 0; i < numTensors(); ++i)
      PLAIT_RETURN_IF_ERROR(decodeTensor(i));
    PLAIT_RETURN_IF_ERROR(checkSavedNames());
    waitedBy_.assign(numInstrs(), kNotWaited);
    for (uint32_t i = 0; i < numInstrs(); ++i)
      PLAIT_RETURN_IF_ERROR(decodeInstr(i));
    PLAIT_RETURN_IF_ERROR(checkCollectivesInFlight());
    PLAIT_RETURN_IF_ERROR(decodeGraphInputs());
    PLAIT_RETURN_IF_ERROR(decodeGraphOutputs());
    return decodeTraining();
  }

private:
  template <typename... Args>
  Status fail(fmt::format_string<Args...> f, Args &&...args) const {
    return Status::error(out_.path + ": " + fmt::format(f, std::forward<Args>(args)...));
  }
  std::string tensorLabel(uint32_t i) const {
    return fmt::format("tensor {} ('{}')", i, printable(out_.tensors[i].name));
  }
  std::string instrLabel(uint32_t i) const {
    return fmt::format("instruction {} ('{}')", i, printable(out_.instrs[i].name));
  }
  static std::string str(const flatbuffers::String *s) { return s ? s->str() : std::string(); }
  size_t numTensors() const { return root_.tensors() ? root_.tensors()->size() : 0; }
  size_t numInstrs() const { return root_.instrs() ? root_.instrs()->size() : 0; }

  Status decodeHeader() {
    out_.worldSize = root_.world_size();
    if (out_.worldSize == 0)
      return fail("world size is 0");
    out_.arenaBytes = copyScalars(root_.arena_bytes());
    if (out_.arenaBytes.size() != out_.worldSize)
      return fail("arena_bytes has {} entries, expected one per rank (world size {})",
                  out_.arenaBytes.size(), out_.worldSize);
    // A plan whose kernels need no scratch may leave workspace_bytes out.
    out_.workspaceBytes = copyScalars(root_.workspace_bytes());
    if (out_.workspaceBytes.empty())
      out_.workspaceBytes.assign(out_.worldSize, 0);
    if (out_.workspaceBytes.size() != out_.worldSize)
      return fail("workspace_bytes has {} entries, expected one per rank (world size {})",
                  out_.workspaceBytes.size(), out_.worldSize);
    out_.peakBytes = copyScalars(root_.peak_bytes());
    if (!out_.peakBytes.empty() && out_.peakBytes.size() != out_.worldSize)
      return fail("peak_bytes has {} entries, expected one per rank (world size {})",
                  out_.peakBytes.size(), out_.worldSize);
    out_.report = str(root_.report());
    out_.source = str(root_.source());
    out_.generatedCpu = copyScalars(root_.generated_cpu());
    out_.generatedCuda = copyScalars(root_.generated_cuda());
    if (root_.device())
      out_.device = root_.device()->str();
    out_.tensors.reserve(numTensors());
    out_.instrs.reserve(numInstrs());
    return {};
  }

  Status decodeKernels() {
    if (!root_.kernels())
      return {};
    for (uint32_t k = 0; k < root_.kernels()->size(); ++k) {
      std::string name = str(root_.kernels()->Get(k));
      KernelFn fn = findKernel(name);
      CollectiveKind collective;
      if (!fn && !collectiveKindOf(name, collective))
        return fail("kernel {} '{}' is not known to this runtime ({} kernels registered)", k,
                    printable(name), kernelNames().size());
      out_.kernels.push_back(std::move(name));
      kernelFns_.push_back(fn);
    }
    return {};
  }

  Status decodeBuffers() {
    if (!root_.buffers())
      return {};
    const uint8_t *fileStart = out_.fileBytes.data();
    for (const fb::Buffer *b : *root_.buffers()) {
      PlanBuffer buffer;
      if (b->data()) {
        buffer.offset = static_cast<size_t>(b->data()->Data() - fileStart);
        buffer.size = b->data()->size();
      }
      out_.buffers.push_back(buffer);
    }
    return {};
  }

  Status decodeTensor(uint32_t i) {
    const fb::Tensor &src = *root_.tensors()->Get(i);
    PlanTensor &t = out_.tensors.emplace_back();
    t.name = str(src.name());
    std::string label = tensorLabel(i);
    int dtype = static_cast<int>(src.dtype());
    if (dtype < 0 || dtype >= kNumDTypes)
      return fail("{}: unknown dtype {}", label, dtype);
    t.dtype = static_cast<DType>(dtype);
    int kind = static_cast<int>(src.kind());
    if (kind < 0 || kind > static_cast<int>(TensorKind::Hyper))
      return fail("{}: unknown tensor kind {}", label, kind);
    t.kind = static_cast<TensorKind>(kind);
    t.shape = copyScalars(src.shape());
    if (t.shape.size() > kMaxRank)
      return fail("{}: rank {} is more than the {} dimensions the runtime supports", label,
                  t.shape.size(), kMaxRank);
    t.offset = src.offset();
    t.bytes = src.bytes();
    t.data = src.data();

    // The product of the non-zero dimensions must fit an int64_t (PlanTensor::numel, the
    // kernels' TensorView and every product of some of the dimensions then fit too), and the
    // bytes a uint64_t. A zero dimension makes the tensor empty: no elements, no bytes.
    int64_t nonZero = 1;
    bool empty = false;
    for (int64_t d : t.shape) {
      if (d < 0)
        return fail("{}: negative dimension in shape {}", label, shapeString(t.shape));
      empty |= d == 0;
      if (d != 0 && __builtin_mul_overflow(nonZero, d, &nonZero))
        return fail("{}: shape {} is too large", label, shapeString(t.shape));
    }
    uint64_t expectedBytes = 0;
    if (!empty && __builtin_mul_overflow(uint64_t(nonZero), dtypeSize(t.dtype), &expectedBytes))
      return fail("{}: shape {} is too large", label, shapeString(t.shape));
    if (t.bytes != expectedBytes)
      return fail("{}: bytes is {}, expected {} for shape {} of {}", label, t.bytes,
                  expectedBytes, shapeString(t.shape), dtypeName(t.dtype));
    for (uint32_t rank = 0; rank < out_.worldSize; ++rank) {
      uint64_t arena = out_.arenaBytes[rank];
      if (t.offset > arena || t.bytes > arena - t.offset)
        return fail("{}: bytes [{}, {}+{}) lie past the end of rank {}'s arena ({} bytes)",
                    label, t.offset, t.offset, t.bytes, rank, arena);
    }
    PLAIT_RETURN_IF_ERROR(checkTensorSource(t, str(src.init()), label, src.shard() != nullptr));
    if (src.shard())
      return decodeShard(*src.shard(), t, label);
    return {};
  }

  // A `groups` partition: ranks inside the world, none twice, whole groups; `everyRank`
  // when each rank must hold a place (sharded params, local_shard).
  Status checkGroups(const std::vector<int64_t> &ranks, int64_t groupSize, bool everyRank,
                     const std::string &label, RankGroups &out) const {
    if (groupSize < 1)
      return fail("{}: group_size must be at least 1, got {}", label, groupSize);
    if (ranks.empty() || ranks.size() % uint64_t(groupSize) != 0)
      return fail("{}: groups holds {} ranks, not a positive multiple of group_size {}", label,
                  ranks.size(), groupSize);
    std::vector<bool> seen(out_.worldSize, false);
    for (int64_t r : ranks) {
      if (r < 0 || r >= int64_t(out_.worldSize))
        return fail("{}: rank {} in groups is outside the world (size {})", label, r,
                    out_.worldSize);
      if (seen[r])
        return fail("{}: rank {} appears twice in groups", label, r);
      seen[r] = true;
    }
    if (everyRank && ranks.size() != out_.worldSize)
      return fail("{}: groups must place every rank of the world (size {}), it holds {}",
                  label, out_.worldSize, ranks.size());
    out.ranks.assign(ranks.begin(), ranks.end());
    out.groupSize = uint32_t(groupSize);
    return {};
  }

  // Where each piece of a sharded param comes from, and that the pieces fit the unit.
  Status decodeShard(const fb::Shard &src, PlanTensor &t, const std::string &label) {
    if (t.kind != TensorKind::Param && t.kind != TensorKind::State)
      return fail("{}: only a param or optimizer state can be sharded, this is a {} tensor",
                  label, tensorKindName(t.kind));
    if (t.data != -1 || t.init.kind != ParamInit::Kind::None)
      return fail("{}: a sharded param takes its values from its pieces, not from a data "
                  "buffer or initializer", label);
    t.sharded = true;
    ShardSpec &shard = t.shard;
    shard.unit = str(src.unit());
    std::vector<uint32_t> ranks = copyScalars(src.groups());
    PLAIT_RETURN_IF_ERROR(checkGroups(std::vector<int64_t>(ranks.begin(), ranks.end()),
                                      src.group_size(), /*everyRank=*/true, label + ": shard",
                                      shard.groups));
    shard.paddedNumel = src.padded_numel();
    uint64_t numel = uint64_t(t.numel()), padded = 0;
    if (__builtin_mul_overflow(numel, uint64_t(shard.groups.groupSize), &padded) ||
        padded != shard.paddedNumel)
      return fail("{}: shard padded_numel is {}, expected {} x group_size {}", label,
                  shard.paddedNumel, numel, shard.groups.groupSize);
    if (src.pieces())
      for (uint32_t k = 0; k < src.pieces()->size(); ++k)
        PLAIT_RETURN_IF_ERROR(decodePiece(*src.pieces()->Get(k), t, k, label));
    std::vector<const ShardPiece *> byOffset;
    for (const ShardPiece &p : shard.pieces)
      byOffset.push_back(&p);
    std::sort(byOffset.begin(), byOffset.end(),
              [](const ShardPiece *a, const ShardPiece *b) { return a->offset < b->offset; });
    for (size_t k = 1; k < byOffset.size(); ++k)
      if (byOffset[k]->offset < byOffset[k - 1]->offset + byOffset[k - 1]->numel)
        return fail("{}: pieces '{}' and '{}' overlap in the unit's flat buffer", label,
                    printable(byOffset[k - 1]->name), printable(byOffset[k]->name));
    return {};
  }

  Status decodePiece(const fb::ShardPiece &src, PlanTensor &t, uint32_t k,
                     const std::string &tensorLabel) {
    ShardPiece &p = t.shard.pieces.emplace_back();
    p.name = str(src.name());
    std::string label = fmt::format("{}: piece {} ('{}')", tensorLabel, k, printable(p.name));
    if (p.name.empty())
      return fail("{}: a piece needs a name", label);
    p.shape = copyScalars(src.shape());
    p.offset = src.offset();
    p.numel = src.numel();
    uint64_t shapeNumel = 1;
    for (int64_t d : p.shape)
      if (d < 0 || __builtin_mul_overflow(shapeNumel, uint64_t(d), &shapeNumel))
        return fail("{}: bad shape {}", label, shapeString(p.shape));
    if (shapeNumel != p.numel)
      return fail("{}: numel is {}, but shape {} has {} elements", label, p.numel,
                  shapeString(p.shape), shapeNumel);
    uint64_t end = 0;
    if (__builtin_add_overflow(p.offset, p.numel, &end) || end > t.shard.paddedNumel)
      return fail("{}: elements [{}, {}+{}) lie outside the unit's padded buffer of {} "
                  "elements", label, p.offset, p.offset, p.numel, t.shard.paddedNumel);
    p.data = src.data();
    std::string init = str(src.init());
    if (t.kind == TensorKind::State && (p.data != -1 || !init.empty()))
      return fail("{}: optimizer state starts as zeros; a piece of it takes no data buffer "
                  "or initializer", label);
    if (p.data != -1) {
      if (p.data < 0 || size_t(p.data) >= out_.buffers.size())
        return fail("{}: data buffer index {} out of range ({} buffers)", label, p.data,
                    out_.buffers.size());
      uint64_t bytes = p.numel * dtypeSize(t.dtype); // p.numel <= paddedNumel: no overflow
      if (out_.buffers[p.data].size != bytes)
        return fail("{}: data buffer {} holds {} bytes, the piece needs {}", label, p.data,
                    out_.buffers[p.data].size, bytes);
      if (!init.empty())
        return fail("{}: has both a data buffer and initializer '{}'", label, printable(init));
    } else if (!init.empty()) {
      Status parsed = parseParamInit(init, p.init);
      if (!parsed.ok())
        return fail("{}: {}", label, parsed.message());
      if (p.init.kind != ParamInit::Kind::Zeros && p.init.kind != ParamInit::Kind::Ones &&
          !isFloat(t.dtype))
        return fail("{}: initializer '{}' needs a float dtype, the param is {}", label,
                    printable(init), dtypeName(t.dtype));
    } else if (p.numel != 0 && t.kind == TensorKind::Param) {
      return fail("{}: has neither a data buffer nor an initializer", label);
    }
    return {};
  }

  // Pieces are saved under their own names beside the replicated params (--save-weights),
  // so none may take a name already taken.
  Status checkSavedNames() const {
    bool anySharded = false;
    for (const PlanTensor &t : out_.tensors)
      anySharded |= t.sharded;
    if (!anySharded)
      return {};
    std::set<std::string> names;
    for (uint32_t i = 0; i < out_.tensors.size(); ++i) {
      const PlanTensor &t = out_.tensors[i];
      if (t.kind != TensorKind::Param)
        continue;
      if (!t.sharded && !names.insert(t.name).second)
        return fail("{}: the name '{}' is taken by another param or shard piece (saved "
                    "weights hold both under their names)", tensorLabel(i), printable(t.name));
      for (const ShardPiece &p : t.shard.pieces)
        if (!names.insert(p.name).second)
          return fail("{}: piece '{}': the name is taken by another param or shard piece "
                      "(saved weights hold both under their names)", tensorLabel(i),
                      printable(p.name));
    }
    return {};
  }

  // Where the tensor's first value comes from must match its kind.
  Status checkTensorSource(PlanTensor &t, const std::string &init, const std::string &label,
                           bool sharded) {
    bool hasData = t.data != -1;
    if (hasData) {
      if (t.kind != TensorKind::Param && t.kind != TensorKind::Constant)
        return fail("{}: {} tensors cannot have a data buffer", label, tensorKindName(t.kind));
      if (t.data < 0 || static_cast<size_t>(t.data) >= out_.buffers.size())
        return fail("{}: data buffer index {} out of range ({} buffers)", label, t.data,
                    out_.buffers.size());
      size_t size = out_.buffers[t.data].size;
      if (size != t.bytes)
        return fail("{}: data buffer {} holds {} bytes, the tensor needs {}", label, t.data,
                    size, t.bytes);
    }
    if (!init.empty()) {
      if (t.kind != TensorKind::Param)
        return fail("{}: {} tensors cannot have an initializer", label,
                    tensorKindName(t.kind));
      if (hasData)
        return fail("{}: has both a data buffer and initializer '{}'", label, printable(init));
      Status parsed = parseParamInit(init, t.init);
      if (!parsed.ok())
        return fail("{}: {}", label, parsed.message());
      if (t.init.kind != ParamInit::Kind::Zeros && t.init.kind != ParamInit::Kind::Ones &&
          !isFloat(t.dtype))
        return fail("{}: initializer '{}' needs a float dtype, the tensor is {}", label,
                    printable(init), dtypeName(t.dtype));
    }
    // PlanBuilder writes no buffer for empty data, so an empty tensor needs none.
    if (t.kind == TensorKind::Constant && !hasData && t.bytes != 0)
      return fail("{}: constant has no data buffer", label);
    if (t.kind == TensorKind::Param && !hasData && init.empty() && t.bytes != 0 &&
        !sharded)
      return fail("{}: param has neither a data buffer nor an initializer", label);
    return {};
  }

  Status checkTensorIndices(const flatbuffers::Vector<uint32_t> *indices, const char *role,
                            const std::string &label, std::vector<uint32_t> &into) const {
    if (!indices)
      return {};
    for (uint32_t t : *indices) {
      if (t >= numTensors())
        return fail("{}: {} tensor index {} out of range ({} tensors)", label, role, t,
                    numTensors());
      into.push_back(t);
    }
    return {};
  }

  Status decodeInstr(uint32_t i) {
    const fb::Instr &src = *root_.instrs()->Get(i);
    PlanInstr &in = out_.instrs.emplace_back();
    in.name = str(src.name());
    std::string label = fmt::format("instruction {} ('{}')", i, printable(in.name));
    in.kernel = src.kernel();
    if (in.kernel >= out_.kernels.size())
      return fail("{}: kernel index {} out of range ({} kernels)", label, in.kernel,
                  out_.kernels.size());
    in.fn = kernelFns_[in.kernel];
    PLAIT_RETURN_IF_ERROR(checkTensorIndices(src.inputs(), "input", label, in.inputs));
    PLAIT_RETURN_IF_ERROR(checkTensorIndices(src.outputs(), "output", label, in.outputs));
    if (src.attrs()) {
      std::set<std::string> seen;
      for (const fb::Attr *a : *src.attrs()) {
        if (!a->name() || a->name()->size() == 0)
          return fail("{}: attribute without a name", label);
        std::string name = a->name()->str();
        if (!seen.insert(name).second)
          return fail("{}: attribute '{}' given twice", label, printable(name));
        AttrValue value;
        value.ints = copyScalars(a->ints());
        value.floats = copyScalars(a->floats());
        value.str = str(a->str());
        in.attrs.set(std::move(name), std::move(value));
      }
    }
    PLAIT_RETURN_IF_ERROR(decodeWaits(src, i, label));
    PLAIT_RETURN_IF_ERROR(checkWorkspace(i, src.workspace()));
    CollectiveKind kind;
    if (collectiveKindOf(out_.kernels[in.kernel], kind))
      return decodeCollective(i, kind, label);
    if (out_.kernels[in.kernel] == "local_shard")
      return checkLocalShard(in, label);
    return {};
  }

  // The workspace the plan declares for instruction i covers what its kernel takes
  // (kernelWorkspaceBytes, the function the compiler sized it with), and every rank's
  // workspace holds it: a kernel then never runs short at run time.
  Status checkWorkspace(uint32_t i, uint64_t declared) {
    PlanInstr &in = out_.instrs[i];
    in.workspace = declared;
    std::vector<OperandType> inputs, outputs;
    for (uint32_t t : in.inputs)
      inputs.push_back({out_.tensors[t].dtype, &out_.tensors[t].shape});
    for (uint32_t t : in.outputs)
      outputs.push_back({out_.tensors[t].dtype, &out_.tensors[t].shape});
    uint64_t need = kernelWorkspaceBytes(out_.kernels[in.kernel], inputs, outputs, in.attrs);
    std::string label = fmt::format("instruction {} ({} '{}')", i,
                                    printable(out_.kernels[in.kernel]), printable(in.name));
    if (need > declared)
      return fail("{}: needs {} workspace bytes, the plan declares {}", label, need, declared);
    for (uint32_t rank = 0; rank < out_.worldSize; ++rank)
      if (declared > out_.workspaceBytes[rank])
        return fail("{}: declares {} workspace bytes, more than rank {}'s workspace ({} bytes)",
                    label, declared, rank, out_.workspaceBytes[rank]);
    return {};
  }

  // Each wait names an earlier collective, and each collective completes at one place.
  Status decodeWaits(const fb::Instr &src, uint32_t i, const std::string &label) {
    PlanInstr &in = out_.instrs[i];
    in.waits = copyScalars(src.waits());
    for (uint32_t w : in.waits) {
      if (w >= i)
        return fail("{}: waits for instruction {}, which is not an earlier instruction", label,
                    w);
      if (!out_.instrs[w].isCollective)
        return fail("{}: waits for {}, which is not a collective ({})", label, instrLabel(w),
                    printable(out_.kernels[out_.instrs[w].kernel]));
      if (waitedBy_[w] != kNotWaited)
        return fail("{}: waits for {}, already waited for by instruction {}", label,
                    instrLabel(w), waitedBy_[w]);
      waitedBy_[w] = i;
    }
    return {};
  }

  // Operands of a one-input, one-output instruction.
  Status unaryOperands(const PlanInstr &in, const std::string &label, const PlanTensor *&x,
                       const PlanTensor *&y) const {
    if (in.inputs.size() != 1 || in.outputs.size() != 1)
      return fail("{}: {} takes one input and one output, got {} and {}", label,
                  out_.kernels[in.kernel], in.inputs.size(), in.outputs.size());
    x = &out_.tensors[in.inputs[0]];
    y = &out_.tensors[in.outputs[0]];
    if (x->dtype != y->dtype)
      return fail("{}: input is {}, output is {}", label, dtypeName(x->dtype),
                  dtypeName(y->dtype));
    return {};
  }

  Status decodeGroupsAttr(const Attrs &attrs, bool everyRank, const std::string &label,
                          RankGroups &out) const {
    if (!attrs.has("groups") || attrs.getInts("groups").empty())
      return fail("{}: needs a 'groups' attribute (the participating ranks, group-major)",
                  label);
    if (!attrs.has("group_size"))
      return fail("{}: needs a 'group_size' attribute", label);
    return checkGroups(attrs.getInts("groups"), attrs.getInt("group_size", 0), everyRank,
                       label, out);
  }

  // The shape, dtype and attribute rules of plan.fbs for one collective.
  Status decodeCollective(uint32_t i, CollectiveKind kind, const std::string &label) {
    PlanInstr &in = out_.instrs[i];
    in.fn = nullptr; // run by the executor through its communicator
    in.isCollective = true;
    CollectiveSpec &spec = in.collective;
    spec.kind = kind;
    const char *name = collectiveKindName(kind);
    const PlanTensor *x, *y;
    PLAIT_RETURN_IF_ERROR(unaryOperands(in, label, x, y));
    PLAIT_RETURN_IF_ERROR(decodeGroupsAttr(in.attrs, /*everyRank=*/false, label, spec.groups));
    uint64_t g = spec.groups.groupSize;
    bool reduces = kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter;
    if (reduces) {
      std::string reduce = in.attrs.getStr("reduce", "sum");
      if (reduce != "sum" && reduce != "mean")
        return fail("{}: reduce is '{}', expected sum or mean", label, printable(reduce));
      spec.mean = reduce == "mean";
      if (x->dtype == DType::I1)
        return fail("{}: {} cannot reduce i1 tensors", label, name);
      if (spec.mean && !isFloat(x->dtype))
        return fail("{}: a mean needs a float dtype, the tensor is {}", label,
                    dtypeName(x->dtype));
    }
    if (kind == CollectiveKind::Broadcast) {
      int64_t root = in.attrs.getInt("root", 0);
      if (root < 0 || uint64_t(root) >= g)
        return fail("{}: root {} is not an index within a group of {}", label, root, g);
      spec.root = uint32_t(root);
    }
    bool sameShape = kind == CollectiveKind::AllReduce || kind == CollectiveKind::Broadcast;
    if (sameShape && x->shape != y->shape)
      return fail("{}: {} keeps the shape, but the input is {} and the output {}", label, name,
                  shapeString(x->shape), shapeString(y->shape));
    if (!sameShape) {
      if (x->shape.size() != 1 || y->shape.size() != 1)
        return fail("{}: {} works on 1-D tensors, got input {} and output {}", label, name,
                    shapeString(x->shape), shapeString(y->shape));
      bool scatter = kind == CollectiveKind::ReduceScatter;
      uint64_t chunk = uint64_t(scatter ? y->numel() : x->numel());
      uint64_t full = uint64_t(scatter ? x->numel() : y->numel());
      if (chunk * g != full)
        return fail("{}: {} over groups of {} needs {} elements = {} x {}, got input {} and "
                    "output {}", label, name, g, scatter ? "input" : "output",
                    scatter ? "output" : "input", g, shapeString(x->shape),
                    shapeString(y->shape));
    }
    // MPI may not alias send and receive buffers; in-place is the one exception it knows.
    bool inPlace = x->offset == y->offset && x->bytes == y->bytes;
    if (overlaps(*x, *y) && !(sameShape && inPlace))
      return fail("{}: input and output of {} overlap in the arena{}", label, name,
                  sameShape ? " (only an exactly in-place one is allowed)" : "");
    return {};
  }

  // local_shard: this rank's chunk of its input, so every rank needs a place in a group.
  Status checkLocalShard(const PlanInstr &in, const std::string &label) const {
    const PlanTensor *x, *y;
    PLAIT_RETURN_IF_ERROR(unaryOperands(in, label, x, y));
    RankGroups groups;
    PLAIT_RETURN_IF_ERROR(decodeGroupsAttr(in.attrs, /*everyRank=*/true, label, groups));
    if (uint64_t(y->numel()) * groups.groupSize != uint64_t(x->numel()))
      return fail("{}: local_shard over groups of {} needs input elements = {} x output, got "
                  "input {} and output {}", label, groups.groupSize, groups.groupSize,
                  shapeString(x->shape), shapeString(y->shape));
    return {};
  }

  static bool overlaps(const PlanTensor &a, const PlanTensor &b) {
    return a.bytes != 0 && b.bytes != 0 && a.offset < b.offset + b.bytes &&
           b.offset < a.offset + a.bytes;
  }

  // A started collective owns its buffers until it completes: MPI reads its input and
  // writes its output in the background. So between the start and the wait no instruction
  // may read the output, or write either buffer. (The memory plan must keep both live until
  // the wait; this catches a plan that does not.)
  Status checkCollectivesInFlight() const {
    for (uint32_t c = 0; c < out_.instrs.size(); ++c) {
      const PlanInstr &coll = out_.instrs[c];
      if (!coll.isCollective)
        continue;
      const PlanTensor &x = out_.tensors[coll.inputs[0]], &y = out_.tensors[coll.outputs[0]];
      uint32_t end = waitedBy_[c] == kNotWaited ? uint32_t(out_.instrs.size()) : waitedBy_[c];
      for (uint32_t j = c + 1; j < end; ++j) {
        const PlanInstr &in = out_.instrs[j];
        for (uint32_t t : in.inputs)
          if (overlaps(out_.tensors[t], y))
            return fail("{}: reads {} while collective {} is still writing it (wait for "
                        "instruction {} first)", instrLabel(j), tensorLabel(t), instrLabel(c),
                        c);
        for (uint32_t t : in.outputs)
          if (overlaps(out_.tensors[t], y) || overlaps(out_.tensors[t], x))
            return fail("{}: writes {}, a buffer of collective {} which is still in flight "
                        "(wait for instruction {} first)", instrLabel(j), tensorLabel(t),
                        instrLabel(c), c);
      }
    }
    return {};
  }

  Status decodeGraphInputs() {
    PLAIT_RETURN_IF_ERROR(checkTensorIndices(root_.inputs(), "input", "graph inputs", out_.inputs));
    std::set<std::string> names;
    std::vector<bool> isGraphInput(out_.tensors.size(), false);
    for (uint32_t t : out_.inputs) {
      const PlanTensor &tensor = out_.tensors[t];
      if (tensor.kind != TensorKind::Input)
        return fail("graph inputs: {} has kind {}, not input", tensorLabel(t),
                    tensorKindName(tensor.kind));
      if (!names.insert(tensor.name).second)
        return fail("graph inputs: two inputs are named '{}'", printable(tensor.name));
      isGraphInput[t] = true;
    }
    // An input tensor nobody binds would be read uninitialised.
    for (uint32_t t = 0; t < out_.tensors.size(); ++t)
      if (out_.tensors[t].kind == TensorKind::Input && !isGraphInput[t])
        return fail("{}: an input tensor that is not listed among the graph inputs",
                    tensorLabel(t));
    return {};
  }

  Status decodeGraphOutputs() {
    PLAIT_RETURN_IF_ERROR(
        checkTensorIndices(root_.outputs(), "output", "graph outputs", out_.outputs));
    if (!root_.output_names()) { // older writers: outputs go by their tensors' names
      for (uint32_t t : out_.outputs)
        out_.outputNames.push_back(out_.tensors[t].name);
      return {};
    }
    if (root_.output_names()->size() != out_.outputs.size())
      return fail("graph outputs: {} names for {} outputs", root_.output_names()->size(),
                  out_.outputs.size());
    for (const flatbuffers::String *name : *root_.output_names())
      out_.outputNames.push_back(str(name));
    return {};
  }

  // Hyper tensors, updates and the schedule: what a training step needs beyond the stream.
  Status decodeTraining() {
    for (uint32_t t = 0; t < out_.tensors.size(); ++t) {
      const PlanTensor &tensor = out_.tensors[t];
      if (tensor.kind != TensorKind::Hyper)
        continue;
      if (tensor.name != "lr" && tensor.name != "step" && tensor.name != "prev_lr")
        return fail("{}: unknown hyper-parameter (expected lr, step or prev_lr)", tensorLabel(t));
      const bool f64 = tensor.dtype == DType::F64 && tensor.name != "step";
      if ((tensor.dtype != DType::F32 && !f64) || !tensor.shape.empty())
        return fail("{}: a hyper-parameter must be a scalar of f32 (or f64, the lr)",
                    tensorLabel(t));
    }
    out_.training = root_.training();
    if (root_.updates()) {
      for (const fb::Update *u : *root_.updates()) {
        if (u->source() >= numTensors() || u->target() >= numTensors())
          return fail("update {} -> {}: tensor index out of range ({} tensors)", u->source(),
                      u->target(), numTensors());
        const PlanTensor &src = out_.tensors[u->source()], &dst = out_.tensors[u->target()];
        if (dst.kind != TensorKind::Param && dst.kind != TensorKind::State)
          return fail("update of {}: the target must be a param or state, not {}",
                      tensorLabel(u->target()), tensorKindName(dst.kind));
        if (src.dtype != dst.dtype || src.shape != dst.shape)
          return fail("update of {}: source {} is {} {}, the target {} {}",
                      tensorLabel(u->target()), tensorLabel(u->source()), dtypeName(src.dtype),
                      shapeString(src.shape), dtypeName(dst.dtype), shapeString(dst.shape));
        out_.updates.push_back({u->source(), u->target()});
      }
    }
    if (out_.training) {
      if (out_.outputs.empty() || out_.tensors[out_.outputs[0]].shape.size() != 0 ||
          !isFloat(out_.tensors[out_.outputs[0]].dtype))
        return fail("a training plan's first output must be the scalar loss");
      if (const fb::LrSchedule *s = root_.schedule()) {
        LrSchedule &sched = out_.schedule;
        sched.kind = str(s->kind());
        sched.lr = s->lr();
        sched.warmupSteps = s->warmup_steps();
        sched.totalSteps = s->total_steps();
        sched.minLr = s->min_lr();
        sched.gamma = s->gamma();
        sched.stepSize = s->step_size();
        sched.power = s->power();
        sched.decaySteps = s->decay_steps();
        sched.cycleSteps = s->cycle_steps();
        sched.cycleMult = s->cycle_mult();
        sched.pctStart = s->pct_start();
        sched.annealLinear = s->anneal_linear();
        sched.threePhase = s->three_phase();
        sched.divFactor = s->div_factor();
        sched.finalDivFactor = s->final_div_factor();
        sched.stepSizeDown = s->step_size_down();
        sched.patience = s->patience();
        sched.threshold = s->threshold();
        sched.thresholdAbs = s->threshold_abs();
        sched.cooldown = s->cooldown();
        sched.eps = s->eps();
        sched.plateauSteps = s->plateau_steps();
        if (s->cyclic_mode())
          sched.cyclicMode = str(s->cyclic_mode());
        if (const auto *milestones = s->milestones())
          sched.milestones = copyScalars(milestones); // 8-byte elements: maybe misaligned
        if (!LrSchedule::known(sched.kind))
          return fail("unknown learning-rate schedule '{}'", printable(sched.kind));
        if (std::string why = sched.invalid(); !why.empty())
          return fail("{}", why);
      } else {
        return fail("a training plan needs a learning-rate schedule");
      }
    }
    return {};
  }

  static constexpr uint32_t kNotWaited = ~0u;

  const fb::Plan &root_;
  Plan &out_;
  std::vector<KernelFn> kernelFns_; // by kernel index
  std::vector<uint32_t> waitedBy_;  // by instruction: the instruction that waits for it
};

// The file identifier as printable text for messages ("PLAN", or "\x00\x01.." escaped).
std::string printableIdentifier(const uint8_t *id) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    unsigned char c = id[i];
    s += std::isprint(c) ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02x}", c);
  }
  return s;
}

} // namespace

Status loadPlanFromBytes(std::vector<uint8_t> bytes, const std::string &path, Plan &out) {
  out = Plan{};
  out.path = path;
  if (plan::hasPlanChecksum(bytes)) {
    uint32_t stored = 0, computed = 0;
    plan::planChecksums(bytes, stored, computed);
    if (stored != computed)
      return Status::errorf("{}: damaged plan file (checksum {:08x}, the contents give "
                            "{:08x}); recompile it or copy it again", path, stored, computed);
    bytes.resize(bytes.size() - plan::kChecksumTrailerBytes);
  }
  // Root offset + identifier is the smallest possible FlatBuffer.
  constexpr size_t kMinSize = sizeof(flatbuffers::uoffset_t) + flatbuffers::kFileIdentifierLength;
  if (bytes.size() < kMinSize)
    return Status::errorf("{}: not a plait plan (file is {} bytes)", path, bytes.size());
  if (bytes.size() >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return Status::errorf("{}: plan file is {} bytes, larger than FlatBuffers allows", path,
                          bytes.size());
  if (!fb::PlanBufferHasIdentifier(bytes.data()))
    return Status::errorf("{}: not a plait plan (file identifier '{}', expected '{}')", path,
                          printableIdentifier(bytes.data() + sizeof(flatbuffers::uoffset_t)),
                          fb::PlanIdentifier());

  flatbuffers::Verifier::Options options;
  // The default cap of 1M tables is too low for big models; one table needs >= 8 bytes.
  options.max_tables = static_cast<flatbuffers::uoffset_t>(bytes.size() / 8 + 1);
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), options);
  if (!fb::VerifyPlanBuffer(verifier))
    return Status::errorf("{}: corrupt plan file (FlatBuffers verification failed)", path);

  out.fileBytes = std::move(bytes);
  const fb::Plan &root = *fb::GetPlan(out.fileBytes.data());
  out.version = root.version();
  if (out.version != kPlanVersion)
    return Status::errorf("{}: plan format version {}, this runtime reads version {} "
                          "(recompile the model with a matching plait-compile)",
                          path, out.version, kPlanVersion);
  return PlanDecoder(root, out).decode();
}

Status loadPlan(const std::string &path, Plan &out) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return Status::errorf("{}: no such file", path);
  if (!std::filesystem::is_regular_file(path, ec))
    return Status::errorf("{}: not a regular file", path);
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file)
    return Status::errorf("{}: cannot open for reading", path);
  std::streamoff size = file.tellg();
  if (size < 0)
    return Status::errorf("{}: cannot determine the file size", path);
  if (static_cast<uint64_t>(size) >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return Status::errorf("{}: plan file is {} bytes, larger than FlatBuffers allows", path,
                          size);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  file.seekg(0);
  if (!file.read(reinterpret_cast<char *>(bytes.data()), size))
    return Status::errorf("{}: read error", path);
  // A file must carry its checksum trailer: without one it was cut short (or is not a plan).
  if (!plan::hasPlanChecksum(bytes)) {
    bool planStart = bytes.size() >= 8 && fb::PlanBufferHasIdentifier(bytes.data());
    return planStart ? Status::errorf("{}: truncated plan file ({} bytes, no checksum "
                                      "trailer at its end)", path, bytes.size())
                     : loadPlanFromBytes(std::move(bytes), path, out); // says what it is not
  }
  return loadPlanFromBytes(std::move(bytes), path, out);
}

} // namespace plait::rt
