// One rank of the CPU communicator tests, started N times by mpirun from comm_mpi_test.cc. Runs
// every check, prints "rank R: ok" or the failures, and exits non-zero on any failure.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "comm/gradient_buckets.h"
#include "comm/mpi_communicator.h"

namespace sluice::comm {
namespace {

int failures = 0;
int my_rank = -1;

#define CHECK_TRUE(cond, what)                                                  \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "rank %d: FAIL %s:%d: %s\n", my_rank, __FILE__, __LINE__, what); \
      ++failures;                                                               \
    }                                                                           \
  } while (0)
#define CHECK_OK(expr)                                                          \
  do {                                                                          \
    const Status _st = (expr);                                                  \
    CHECK_TRUE(_st.ok(), _st.ToString().c_str());                               \
  } while (0)

// Integer-valued, so sums are exact in float whatever order MPI adds in.
float Value(int rank, size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 17) + static_cast<int>(i % 1000));
}
float Mean(int world, size_t i) {
  float sum = 0;
  for (int r = 0; r < world; ++r) sum += Value(r, i);
  return sum / static_cast<float>(world);
}

void AveragesAreExact(MpiCommunicator* c) {
  std::vector<float> v(100003);
  for (size_t i = 0; i < v.size(); ++i) v[i] = Value(c->rank(), i);
  CHECK_OK(c->AllReduceAverage(v.data(), v.size()));
  size_t bad = 0;
  for (size_t i = 0; i < v.size(); ++i) bad += v[i] != Mean(c->world(), i);
  CHECK_TRUE(bad == 0, "all-reduce average differs from the exact mean");
}

void BroadcastFromEveryRoot(MpiCommunicator* c) {
  for (int root = 0; root < c->world(); ++root) {
    std::string s(1000, static_cast<char>('a' + c->rank()));
    CHECK_OK(c->Broadcast(s.data(), s.size(), root));
    CHECK_TRUE(s == std::string(1000, static_cast<char>('a' + root)), "broadcast payload");
  }
  CHECK_TRUE(c->Broadcast(nullptr, 0, c->world()).IsInvalidArgument(), "bad root accepted");
  CHECK_OK(c->Barrier());
}

void BucketsInOrderAndOverlapped(MpiCommunicator* c) {
  std::unique_ptr<ReduceLane> lane;
  CHECK_OK(c->MakeLane(&lane));
  if (lane == nullptr) return;
  const size_t n = 50021;
  std::vector<float> grads(n);
  GradientBuckets buckets(grads.data(), n, 4096, lane.get());
  // Tensors in reverse layer order; each rank finishes some neighbours in swapped order (as
  // streams of different GPUs might), yet must submit the same bucket sequence.
  std::vector<std::pair<size_t, size_t>> tensors;
  for (size_t off = 0, k = 0; off < n; ++k) {
    const size_t len = std::min<size_t>(n - off, 700 + (k * 389) % 3000);
    tensors.emplace_back(off, len);
    off += len;
  }
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < n; ++i) grads[i] = Value(c->rank(), i + step);
    std::vector<size_t> order(tensors.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    for (size_t k = (c->rank() + step) % 2; k + 1 < order.size(); k += 3)
      std::swap(order[k], order[k + 1]);
    size_t submitted_before_last = 0;
    for (size_t k = 0; k < order.size(); ++k) {
      if (k + 1 == order.size()) submitted_before_last = buckets.submitted().size();
      CHECK_OK(buckets.MarkReady(tensors[order[k]].first, tensors[order[k]].second));
    }
    CHECK_TRUE(submitted_before_last > 0, "no bucket went out before backward ended");
    std::vector<uint32_t> mine = buckets.submitted();
    CHECK_TRUE(mine.size() == buckets.num_buckets(), "not every bucket was submitted");
    for (size_t k = 0; k < mine.size(); ++k) CHECK_TRUE(mine[k] == k, "buckets out of index order");
    CHECK_OK(buckets.Finish());
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      float sum = 0;
      for (int r = 0; r < c->world(); ++r) sum += Value(r, i + step);
      bad += grads[i] != sum / static_cast<float>(c->world());
    }
    CHECK_TRUE(bad == 0, "bucketed average differs from the exact mean");
    // Same sequence on every rank: compare with rank 0's.
    std::vector<uint32_t> root = mine;
    CHECK_OK(c->Broadcast(root.data(), root.size() * sizeof(uint32_t), 0));
    CHECK_TRUE(root == mine, "bucket order differs from rank 0's");
  }
}

void UnevenBatchCountsAreAnErrorNotAHang(MpiCommunicator* c) {
  CHECK_OK(AgreeOnBatchCount(c, 10, "epoch 0"));
  const uint64_t mine = c->rank() == c->world() - 1 ? 11 : 10;
  const Status st = AgreeOnBatchCount(c, mine, "epoch 1");
  CHECK_TRUE(st.IsInvalidArgument(), "uneven counts were accepted");
  CHECK_TRUE(st.message().find("10 to 11") != std::string::npos, st.message().c_str());
  // Every rank learnt it from the same collective: the job can stop cleanly, nobody waits.
  CHECK_OK(c->Barrier());
}

}  // namespace
}  // namespace sluice::comm

int main() {
  using namespace sluice::comm;
  std::unique_ptr<MpiCommunicator> comm;
  const sluice::Status st = MpiCommunicator::Create(&comm);
  if (!st.ok()) {
    std::fprintf(stderr, "MpiCommunicator::Create: %s\n", st.ToString().c_str());
    return 1;
  }
  my_rank = comm->rank();
  AveragesAreExact(comm.get());
  BroadcastFromEveryRoot(comm.get());
  BucketsInOrderAndOverlapped(comm.get());
  UnevenBatchCountsAreAnErrorNotAHang(comm.get());
  if (failures == 0) std::printf("rank %d of %d: ok\n", comm->rank(), comm->world());
  comm.reset();
  return failures == 0 ? 0 : 1;
}
