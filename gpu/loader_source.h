// The loader as a BatchSource, and the device capacity its epoch plan needs.
//
//   options.allocator = sluice::gpu::MakePinnedAllocator();   // pinned batch buffers
//   options.consumer_batches = 2;                              // see below
//   Loader::Open(dir, options, &loader); loader->Start(epoch);
//   LoaderSource source(loader.get());
//   FeederOptions fo; fo.capacity = CapacityForPlan(*loader);
//
// consumer_batches is how many batches the feeder may hold while their copies run: 1 works (the
// feeder then waits for each copy one source call later), 2 gives the copy a whole step of slack.
#pragma once

#include "gpu/batch_source.h"
#include "gpu/feeder.h"
#include "loader/loader.h"

namespace sluice::gpu {

// A HostBatch viewing `batch`'s buffers (valid while the loader holds it for the consumer).
HostBatch HostBatchOf(const loader::Batch& batch);

class LoaderSource : public BatchSource {
 public:
  explicit LoaderSource(loader::Loader* loader) : loader_(loader) {}
  Status Next(HostBatch* out, bool* end) override;
  int holds() const override;

 private:
  loader::Loader* loader_;
};

// The largest batch of the started epoch's plan (from the index alone, like the loader's own pool
// reservation): feature bytes, rows, and token ids for the widest token row the index counts, or
// rows * `tokens_per_row` where that is more (records tokenized online carry no counts: 0 grows
// the buffers on the first batch that has tokens); packed batches' columns and loss masks, and a
// conversation dataset's audio turns (Loader::max_batch_shape).
FeedCapacity CapacityForPlan(const loader::Loader& loader, size_t tokens_per_row = 0);

}  // namespace sluice::gpu
