#include "loader/schedule.h"

#include <algorithm>
#include <limits>

namespace sluice::loader {

void MakeReadSchedule(const IndexColumns& index, const EpochPlan& plan, uint64_t start_batch,
                      int lag, uint32_t open_batches, ReadSchedule* out) {
  {  // keeps the previous schedule's buffers (cleared): no page faults per epoch
    ReadSchedule fresh;
    fresh.steps = std::move(out->steps);
    fresh.items = std::move(out->items);
    fresh.steps.clear();
    fresh.items.clear();
    *out = std::move(fresh);
  }
  out->start_batch = start_batch;
  const size_t nbatches = plan.batches.size();
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  const uint64_t ahead = open_batches ? open_batches : std::numeric_limits<uint64_t>::max();

  // Items grouped by block, batch order (then row order) within a block: a counting sort of the
  // rows in plan order.
  const size_t nblocks = index.num_blocks();
  std::vector<uint32_t> block_begin(nblocks + 1, 0);
  for (size_t j = start_batch; j < nbatches; ++j)
    for (uint32_t e = 0; e < plan.batches[j].entries; ++e)
      block_begin[index.block_of[plan.records[plan.batches[j].first + e]] + 1]++;
  for (size_t g = 0; g < nblocks; ++g) block_begin[g + 1] += block_begin[g];
  std::vector<uint32_t> cursor(block_begin.begin(), block_begin.end() - 1);
  out->items.resize(block_begin[nblocks]);
  for (size_t j = start_batch; j < nbatches; ++j) {
    const PlannedBatch& pb = plan.batches[j];
    for (uint64_t e = pb.first; e < pb.first + pb.entries; ++e) {
      const uint64_t r = plan.records[e];
      out->items[cursor[index.block_of[r]]++] = {r, static_cast<uint32_t>(j), plan.row_of(e, pb)};
    }
  }

  // Steps in order of first need, batch by batch. A step serves the block's pending rows of
  // batches [j, j + open_batches); rows of batches further ahead wait for another read. With a
  // cap, a step that would open more than open_batches batches is preceded by barrier steps
  // (no read) until `lag` steps have passed since the batches before j were complete: the
  // pipeline's token bound then guarantees they have left the pipeline.
  std::copy(block_begin.begin(), block_begin.end() - 1, cursor.begin());
  std::vector<uint8_t> seen(nblocks, 0), is_open(nbatches, 0);
  std::vector<uint32_t> emit_step(nbatches, 0), last_served(nbatches, 0);
  uint64_t opened_count = 0, emitted_count = 0;
  size_t next_unemitted = start_batch;
  for (size_t j = start_batch; j < nbatches; ++j) {
    const PlannedBatch& pb = plan.batches[j];
    for (uint32_t e = 0; e < pb.entries; ++e) {
      const uint32_t g = index.block_of[plan.records[pb.first + e]];
      uint32_t c = cursor[g];
      if (c == block_begin[g + 1] || out->items[c].batch != j) continue;  // already served
      const uint32_t first = c;
      uint64_t fresh = 0;
      while (c < block_begin[g + 1] && out->items[c].batch - j < ahead) {  // batch >= j
        const uint32_t b = out->items[c].batch;
        if (!is_open[b] && (c == first || out->items[c - 1].batch != b)) fresh++;
        ++c;
      }
      if (open_batches > 0) {
        for (;;) {
          const int64_t t = static_cast<int64_t>(out->steps.size());
          while (next_unemitted < j && static_cast<int64_t>(emit_step[next_unemitted]) <= t - lag) {
            ++next_unemitted;
            ++emitted_count;
          }
          if (opened_count + fresh - emitted_count <= open_batches) break;
          out->steps.push_back({kBarrierBlock, 0, 0});
          out->barriers++;
        }
      }
      const uint32_t s = static_cast<uint32_t>(out->steps.size());
      for (uint32_t k = first; k < c; ++k) {
        const uint32_t b = out->items[k].batch;
        if (!is_open[b]) {
          is_open[b] = 1;
          opened_count++;
        }
        last_served[b] = s;
      }
      cursor[g] = c;
      out->steps.push_back({g, first, c - first});
      if (seen[g]) out->rereads++;
      seen[g] = 1;
    }
    // Batch j is complete after its last step; it leaves after every batch before it.
    emit_step[j] = std::max(last_served[j], j > start_batch ? emit_step[j - 1] : 0u);
  }

  // Pool bound: at read step t, open = batches first needed at steps <= t minus batches
  // emitted by steps <= t - lag (in-order emission: a batch leaves after every earlier one).
  const size_t nsteps = out->steps.size();
  std::vector<uint32_t> first_step(nbatches, kNone), last_step(nbatches, 0);
  for (uint32_t s = 0; s < nsteps; ++s) {
    const ReadStep& st = out->steps[s];
    for (uint32_t k = 0; k < st.num_items; ++k) {
      const uint32_t j = out->items[st.first_item + k].batch;
      first_step[j] = std::min(first_step[j], s);
      last_step[j] = std::max(last_step[j], s);
    }
  }
  std::vector<int64_t> opened_at(nsteps + 1, 0), emitted_at(nsteps + 1, 0);
  uint32_t emit = 0;
  for (size_t j = start_batch; j < nbatches; ++j) {
    opened_at[first_step[j]]++;
    emit = std::max(emit, last_step[j]);
    emitted_at[emit]++;
  }
  int64_t opened = 0, emitted = 0, worst = 0;
  for (size_t t = 0; t < nsteps; ++t) {
    opened += opened_at[t];
    if (t >= static_cast<size_t>(lag)) emitted += emitted_at[t - lag];
    worst = std::max(worst, opened - emitted);
  }
  out->max_open_batches = static_cast<size_t>(worst);
}

}  // namespace sluice::loader
