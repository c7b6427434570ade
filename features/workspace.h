// Per-thread scratch for the feature computers. The computers are immutable and shared; each
// thread brings its own Workspace, reused from call to call, so the per-frame path allocates
// nothing and the buffers stay in that core's cache. Any computer may use any Workspace (the
// buffers grow to the largest size seen). Not thread-safe: one Workspace per thread.
#pragma once

#include "features/fft.h"

namespace sluice::features {

class Workspace {
 public:
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  Workspace(Workspace&&) = default;
  Workspace& operator=(Workspace&&) = default;

  // Used by the computers; contents are meaningless between calls.
  AlignedBuffer frame;     // one frame of input (edge frames, dithered frames)
  AlignedBuffer fft_in;    // windowed frame, zero-padded to the FFT size
  AlignedBuffer fft_out;   // (re, im) pairs
  AlignedBuffer spectrum;  // power or magnitude per FFT bin
};

}  // namespace sluice::features
