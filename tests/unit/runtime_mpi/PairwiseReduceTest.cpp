// The pairwise all-reduce and reduce-scatter (runtime/comm/PairwiseReduce.h) over real MPI
// ranks (mpirun -np 2 and -np 4): results against sums made here in the exchange's order
// (bit for bit, in every float dtype), against Open MPI's own collectives where the sums are
// exact, sizes around chunk, segment and window edges, empty chunks, in-place buffers, and
// several reductions in flight on different groups at once, waited for out of order.
#include <cstring>
#include <numeric>

#include <gtest/gtest.h>

#include "runtime/comm/Mpi.h"
#include "runtime/comm/PairwiseReduce.h"

namespace plait::rt::mpi {
namespace {

class PairwiseReduceTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    // Every float reduction, however small, goes pairwise.
    Status s = makeWorldComm(pairwise_, {ReduceAlgorithm::Pairwise});
    ASSERT_TRUE(s.ok()) << s.message();
    s = makeWorldComm(library_, {ReduceAlgorithm::Mpi});
    ASSERT_TRUE(s.ok()) << s.message();
    for (Communicator *c : {pairwise_.get(), library_.get()})
      c->setTimeout(60);
  }
  static void TearDownTestSuite() {
    pairwise_.reset();
    library_.reset();
  }

  static uint32_t rank() { return pairwise_->rank(); }
  static uint32_t world() { return pairwise_->size(); }

  static RankGroups wholeWorld() {
    RankGroups g;
    g.groupSize = world();
    g.ranks.resize(world());
    std::iota(g.ranks.begin(), g.ranks.end(), 0u);
    return g;
  }

  // Runs one collective on `comm` over `groups` and waits for it.
  static void run(Communicator &comm, const RankGroups &groups, const CollectiveArgs &args) {
    CommGroup group = 0;
    Status s = comm.group(groups, group);
    ASSERT_TRUE(s.ok()) << s.message();
    CommRequest request = 0;
    s = comm.start(group, args, request);
    ASSERT_TRUE(s.ok()) << s.message();
    s = comm.wait(request);
    ASSERT_TRUE(s.ok()) << s.message();
  }

  static std::unique_ptr<Communicator> pairwise_, library_;
};

std::unique_ptr<Communicator> PairwiseReduceTest::pairwise_, PairwiseReduceTest::library_;

// Rank `r`'s element `i`: inexact in every float dtype, so that a different order of the sums
// would show.
float contribution(uint32_t r, uint64_t i) {
  return float(int64_t((r * 7919 + i * 104729) % 2003) - 1001) * 0.3718f + 0.001f * float(r);
}

uint16_t toHalf(DType t, float v) { return t == DType::BF16 ? floatToBf16(v) : floatToF16(v); }
float fromHalf(DType t, uint16_t v) { return t == DType::BF16 ? bf16ToFloat(v) : f16ToFloat(v); }

// This rank's buffer of `n` elements of `dtype`, as raw bytes.
std::vector<uint8_t> buffer(DType dtype, uint32_t r, uint64_t n) {
  std::vector<uint8_t> out(n * dtypeSize(dtype));
  for (uint64_t i = 0; i < n; ++i) {
    float v = contribution(r, i);
    if (dtype == DType::F32)
      std::memcpy(out.data() + 4 * i, &v, 4);
    else if (dtype == DType::F64) {
      double d = double(v) * 1.0000001;
      std::memcpy(out.data() + 8 * i, &d, 8);
    } else {
      uint16_t h = toHalf(dtype, v);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

// Elements [begin, end) of T summed over `p` ranks in the exchange's order for the chunk's
// owner `owner`: its own value first, then rank owner-1's, owner-2's, ... (mod p), each
// addition by `add` (rounded to the dtype); appended to `out`.
template <typename T, typename Add>
void appendSumsOf(uint32_t p, uint32_t owner, const std::vector<std::vector<uint8_t>> &all,
                  uint64_t begin, uint64_t end, Add add, std::vector<uint8_t> &out) {
  size_t at = out.size();
  out.resize(at + (end - begin) * sizeof(T));
  for (uint64_t i = begin; i < end; ++i, at += sizeof(T)) {
    T sum, next;
    std::memcpy(&sum, all[owner].data() + i * sizeof(T), sizeof(T));
    for (uint32_t t = 1; t < p; ++t) {
      std::memcpy(&next, all[(owner + p - t) % p].data() + i * sizeof(T), sizeof(T));
      sum = add(sum, next);
    }
    std::memcpy(out.data() + at, &sum, sizeof(T));
  }
}

void appendSums(DType dtype, uint32_t p, uint32_t owner,
                const std::vector<std::vector<uint8_t>> &all, uint64_t begin, uint64_t end,
                std::vector<uint8_t> &out) {
  auto plus = [](auto a, auto b) { return a + b; };
  if (dtype == DType::F32)
    appendSumsOf<float>(p, owner, all, begin, end, plus, out);
  else if (dtype == DType::F64)
    appendSumsOf<double>(p, owner, all, begin, end, plus, out);
  else
    appendSumsOf<uint16_t>(
        p, owner, all, begin, end,
        [dtype](uint16_t a, uint16_t b) {
          return toHalf(dtype, fromHalf(dtype, a) + fromHalf(dtype, b));
        },
        out);
}

// The first element where `got` differs from `want` ("" when none), for a readable failure.
std::string firstDifference(const std::vector<uint8_t> &got, const std::vector<uint8_t> &want,
                            size_t elementBytes) {
  if (got.size() != want.size())
    return "sizes " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); i += elementBytes)
    if (std::memcmp(got.data() + i, want.data() + i, elementBytes) != 0)
      return "element " + std::to_string(i / elementBytes);
  return "";
}

constexpr DType kDtypes[] = {DType::F32, DType::F64, DType::BF16, DType::F16};

// Sizes in elements: empty chunks (fewer elements than ranks), uneven chunks, one segment
// and one more, and (f32 and bf16, the gradients' dtypes) chunks of several segments that
// wrap the windows of kPairwiseSlots.
std::vector<uint64_t> sizesFor(DType dtype, uint32_t p) {
  uint64_t segment = kPairwiseSegmentBytes / dtypeSize(dtype);
  std::vector<uint64_t> sizes{1,           uint64_t(p) + 1, 1000,
                              segment * p, segment * p + 1, segment * p - 1};
  if (dtype == DType::F32 || dtype == DType::BF16)
    sizes.push_back((uint64_t(kPairwiseSlots) + 2) * segment * p + 3);
  return sizes;
}

TEST_F(PairwiseReduceTest, AllReduceMatchesTheExchangeOrderBitForBit) {
  const uint32_t p = world(), r = rank();
  for (DType dtype : kDtypes)
    for (uint64_t n : sizesFor(dtype, p)) {
      std::vector<std::vector<uint8_t>> all;
      for (uint32_t q = 0; q < p; ++q)
        all.push_back(buffer(dtype, q, n));
      std::vector<uint8_t> want;
      for (uint32_t owner = 0; owner < p; ++owner)
        appendSums(dtype, p, owner, all, owner * n / p, (owner + 1) * n / p, want);
      for (bool inPlace : {false, true}) {
        std::vector<uint8_t> send = all[r], recv(send.size(), 0xAB);
        CollectiveArgs args;
        args.kind = CollectiveKind::AllReduce;
        args.dtype = dtype;
        args.count = n;
        args.send = inPlace ? recv.data() : send.data();
        args.recv = recv.data();
        if (inPlace)
          recv = send;
        run(*pairwise_, wholeWorld(), args);
        EXPECT_EQ(firstDifference(recv, want, dtypeSize(dtype)), "")
            << dtypeName(dtype) << " n=" << n << (inPlace ? " in place" : "");
        if (!inPlace)
          EXPECT_EQ(send, all[r]) << "the send buffer changed";
      }
    }
}

TEST_F(PairwiseReduceTest, ReduceScatterMatchesTheExchangeOrderBitForBit) {
  const uint32_t p = world(), r = rank();
  for (DType dtype : kDtypes)
    for (uint64_t chunk :
         {uint64_t(1), uint64_t(3), kPairwiseSegmentBytes / dtypeSize(dtype),
          (uint64_t(kPairwiseSlots) + 1) * kPairwiseSegmentBytes / dtypeSize(dtype) + 5}) {
      std::vector<std::vector<uint8_t>> all;
      for (uint32_t q = 0; q < p; ++q)
        all.push_back(buffer(dtype, q, chunk * p));
      std::vector<uint8_t> recv(chunk * dtypeSize(dtype), 0xAB);
      CollectiveArgs args;
      args.kind = CollectiveKind::ReduceScatter;
      args.dtype = dtype;
      args.count = chunk;
      args.send = all[r].data();
      args.recv = recv.data();
      run(*pairwise_, wholeWorld(), args);
      std::vector<uint8_t> want;
      appendSums(dtype, p, r, all, r * chunk, (r + 1) * chunk, want);
      EXPECT_EQ(firstDifference(recv, want, dtypeSize(dtype)), "")
          << dtypeName(dtype) << " chunk=" << chunk;
      EXPECT_EQ(all[r], buffer(dtype, r, chunk * p)) << "the send buffer changed";
    }
}

// Where every order gives the same sums (small integers), pairwise and Open MPI agree.
TEST_F(PairwiseReduceTest, AgreesWithOpenMpiOnExactSums) {
  const uint32_t p = world(), r = rank();
  const uint64_t n = 3 * kPairwiseSegmentBytes / 4 + 17; // floats: three segments and a bit
  std::vector<float> send(n);
  for (uint64_t i = 0; i < n; ++i)
    send[i] = float((i * 31 + r * 7) % 64);
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter}) {
    uint64_t count = kind == CollectiveKind::AllReduce ? n : n / p;
    std::vector<float> a(count), b(count);
    CollectiveArgs args;
    args.kind = kind;
    args.count = count;
    args.send = send.data();
    args.recv = a.data();
    run(*pairwise_, wholeWorld(), args);
    args.recv = b.data();
    run(*library_, wholeWorld(), args);
    EXPECT_EQ(a, b) << collectiveKindName(kind);
  }
  EXPECT_NE(pairwise_->note().find("pairwise exchange"), std::string::npos) << pairwise_->note();
  EXPECT_NE(library_->note().find("--reduce-algorithm mpi"), std::string::npos);
}

// Auto: two ranks, and reduce-scatters, exchange pairwise at any size on one node; all-reduces
// over more ranks leave buffers of less than kPairwiseMinChunkBytes a rank, and groups across
// nodes everything, to Open MPI (this test's ranks share one node).
TEST_F(PairwiseReduceTest, AutoChoosesByGroupAndChunkSize) {
  const CollectiveKind ar = CollectiveKind::AllReduce, rs = CollectiveKind::ReduceScatter;
  EXPECT_TRUE(pairwiseWins(ar, 4, 2, true));
  EXPECT_TRUE(pairwiseWins(rs, 16, 4, true));
  EXPECT_FALSE(pairwiseWins(ar, 4 * kPairwiseMinChunkBytes - 1, 4, true));
  EXPECT_TRUE(pairwiseWins(ar, 4 * kPairwiseMinChunkBytes, 4, true));
  EXPECT_FALSE(pairwiseWins(ar, 1u << 30, 1, true));
  EXPECT_FALSE(pairwiseWins(rs, 1u << 30, 1, true));
  // Across nodes Open MPI's own, whatever the size.
  EXPECT_FALSE(pairwiseWins(ar, 1u << 30, 2, false));
  EXPECT_FALSE(pairwiseWins(rs, 1u << 30, 4, false));

  std::unique_ptr<Communicator> automatic;
  ASSERT_TRUE(makeWorldComm(automatic).ok());
  std::vector<float> small(256, 1.0f), large(kPairwiseMinChunkBytes / 4 * world(), 1.0f);
  for (std::vector<float> *buffer : {&small, &large}) {
    CollectiveArgs args;
    args.count = buffer->size();
    args.send = args.recv = buffer->data();
    run(*automatic, wholeWorld(), args);
    EXPECT_EQ((*buffer)[0], float(world()));
  }
  std::string expected = world() == 2 ? "reductions: 2 float" : "reductions: 1 float";
  EXPECT_EQ(automatic->note().rfind(expected, 0), 0u) << automatic->note();
}

// Reductions on the world and on pairs of ranks (and an all-gather through Open MPI) in
// flight together, waited for newest first: each still gets its own sums.
TEST_F(PairwiseReduceTest, SeveralInFlightOnDifferentGroups) {
  const uint32_t p = world(), r = rank();
  RankGroups pairs;
  pairs.groupSize = p % 2 == 0 ? 2 : 1;
  for (uint32_t q = 0; q < p; ++q)
    pairs.ranks.push_back(q);
  CommGroup all = 0, two = 0;
  ASSERT_TRUE(pairwise_->group(wholeWorld(), all).ok());
  ASSERT_TRUE(pairwise_->group(pairs, two).ok());

  const uint64_t n = 2 * kPairwiseSegmentBytes / 4 + 5;
  std::vector<std::vector<float>> sends, recvs;
  std::vector<CommRequest> requests;
  for (int k = 0; k < 4; ++k) {
    sends.emplace_back(n);
    for (uint64_t i = 0; i < n; ++i)
      sends.back()[i] = float(k * 1000 + int(r) + int(i % 13));
    recvs.emplace_back(n, -1.0f);
    CollectiveArgs args;
    args.count = n;
    args.send = sends.back().data();
    args.recv = recvs.back().data();
    CommRequest request = 0;
    Status s = pairwise_->start(k % 2 == 0 ? all : two, args, request);
    ASSERT_TRUE(s.ok()) << s.message();
    requests.push_back(request);
  }
  std::vector<float> gathered(p, 0), mine(1, float(r));
  CollectiveArgs gather;
  gather.kind = CollectiveKind::AllGather;
  gather.count = 1;
  gather.send = mine.data();
  gather.recv = gathered.data();
  CommRequest gatherRequest = 0;
  ASSERT_TRUE(pairwise_->start(all, gather, gatherRequest).ok());
  ASSERT_TRUE(pairwise_->poll().ok());
  ASSERT_TRUE(pairwise_->wait(gatherRequest).ok());
  for (int k = 3; k >= 0; --k) {
    Status s = pairwise_->wait(requests[size_t(k)]);
    ASSERT_TRUE(s.ok()) << s.message();
  }

  uint32_t first = r / pairs.groupSize * pairs.groupSize;
  for (int k = 0; k < 4; ++k) {
    bool world = k % 2 == 0;
    float ranks = 0;
    for (uint32_t q = world ? 0 : first; q < (world ? p : first + pairs.groupSize); ++q)
      ranks += float(q);
    float members = float(world ? p : pairs.groupSize);
    for (uint64_t i = 0; i < n; i += 997)
      ASSERT_EQ(recvs[size_t(k)][i], members * float(k * 1000 + int(i % 13)) + ranks)
          << "reduction " << k << " element " << i;
  }
  for (uint32_t q = 0; q < p; ++q)
    EXPECT_EQ(gathered[q], float(q));
}

} // namespace
} // namespace plait::rt::mpi
