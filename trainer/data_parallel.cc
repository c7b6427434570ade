#include "trainer/data_parallel.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <string>

#include "shards/checksum.h"

namespace sluice::train {

Status AllGatherHost(comm::Communicator* comm, const int64_t* mine, size_t k,
                     std::vector<int64_t>* all) {
  const int world = comm->world(), rank = comm->rank();
  all->assign(static_cast<size_t>(world) * k, INT64_MIN);
  std::copy(mine, mine + k, all->begin() + static_cast<ptrdiff_t>(rank * k));
  return comm->AllReduceMaxHost(all->data(), all->size());
}

Status AllGatherStrings(comm::Communicator* comm, const std::string& mine,
                        std::vector<std::string>* all) {
  const int64_t length = static_cast<int64_t>(mine.size());
  std::vector<int64_t> lengths;
  SLUICE_RETURN_IF_ERROR(AllGatherHost(comm, &length, 1, &lengths));
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  const size_t words = static_cast<size_t>(longest + 7) / 8;
  // Bytes packed 8 to a word, zero-padded. The max-reduction under AllGatherHost needs every
  // word a rank owns to exceed INT64_MIN (the other ranks' filler): that word is 7 NUL bytes
  // then 0x80, which a NUL-free string padded only at its end never produces.
  std::vector<int64_t> packed(std::max<size_t>(words, 1), 0);
  std::memcpy(packed.data(), mine.data(), mine.size());
  std::vector<int64_t> gathered;
  SLUICE_RETURN_IF_ERROR(AllGatherHost(comm, packed.data(), packed.size(), &gathered));
  all->clear();
  for (int r = 0; r < comm->world(); ++r) {
    const char* bytes = reinterpret_cast<const char*>(gathered.data() + r * packed.size());
    all->emplace_back(bytes, static_cast<size_t>(lengths[static_cast<size_t>(r)]));
  }
  return Status::OK();
}

Status GatherStepRows(comm::Communicator* comm, int64_t rows, int64_t frames, StepRows* out) {
  const int64_t mine[2] = {rows, frames};
  std::vector<int64_t> all;
  SLUICE_RETURN_IF_ERROR(AllGatherHost(comm, mine, 2, &all));
  *out = StepRows();
  for (int r = 0; r < comm->world(); ++r) {
    out->total_rows += all[2 * r];
    out->total_frames += all[2 * r + 1];
  }
  return Status::OK();
}

Status CombineGradients(comm::Communicator* comm, float* grads, size_t count, int64_t rows,
                        int64_t total_rows, double* loss) {
  if (total_rows <= 0)
    return Status::InvalidArgument("CombineGradients: total_rows " + std::to_string(total_rows) +
                                   " (no step to take)");
  const double scale = GradientScale(comm->world(), rows, total_rows);
  if (scale != 1.0) {
    const float s = static_cast<float>(scale);
    for (size_t i = 0; i < count; ++i) grads[i] *= s;
  }
  SLUICE_RETURN_IF_ERROR(comm->AllReduceAverage(grads, count));
  return CombineLoss(comm, scale, loss);
}

double GradientScale(int world, int64_t rows, int64_t total_rows) {
  // The average divides by world; this scale turns it into the row-weighted mean. In double, so
  // that a scale of exactly 1 (equal shares) leaves the gradient's bits alone.
  return static_cast<double>(rows) * world / static_cast<double>(total_rows);
}

Status CombineLoss(comm::Communicator* comm, double scale, double* loss) {
  double mine = *loss * scale;
  SLUICE_RETURN_IF_ERROR(SumDoubles(comm, &mine, 1));
  *loss = mine / comm->world();
  return Status::OK();
}

Status SumOverRanks(comm::Communicator* comm, int64_t* values, size_t count) {
  std::vector<int64_t> all;
  SLUICE_RETURN_IF_ERROR(AllGatherHost(comm, values, count, &all));
  for (size_t i = 0; i < count; ++i) {
    int64_t sum = 0;
    for (int r = 0; r < comm->world(); ++r) sum += all[r * count + i];
    values[i] = sum;
  }
  return Status::OK();
}

Status SumDoubles(comm::Communicator* comm, double* values, size_t count) {
  std::vector<int64_t> bits(count), all;
  for (size_t i = 0; i < count; ++i) bits[i] = std::bit_cast<int64_t>(values[i]);
  SLUICE_RETURN_IF_ERROR(AllGatherHost(comm, bits.data(), count, &all));
  for (size_t i = 0; i < count; ++i) {
    double sum = 0;
    for (int r = 0; r < comm->world(); ++r) sum += std::bit_cast<double>(all[r * count + i]);
    values[i] = sum;
  }
  return Status::OK();
}

Status CheckSameParameters(comm::Communicator* comm, const float* params, size_t count,
                           const std::string& where) {
  const int64_t mine = static_cast<int64_t>(shards::Checksum(params, count * sizeof(float)));
  std::vector<int64_t> all;
  SLUICE_RETURN_IF_ERROR(AllGatherHost(comm, &mine, 1, &all));
  bool same = true;
  for (int64_t c : all) same = same && c == all[0];
  if (same) return Status::OK();
  std::string list;
  for (int r = 0; r < comm->world(); ++r)
    list += (r ? ", " : "") + std::string("rank ") + std::to_string(r) + " " +
            shards::ChecksumHex(static_cast<uint64_t>(all[r]));
  return Status::InvalidArgument(
      where + ": the ranks' parameters differ (" + list +
      "); data-parallel training keeps them identical. HINT: resume every rank "
      "from the same checkpoint");
}

}  // namespace sluice::train
