// Speed perturbation has two spellings: the older LoaderOptions::speed_perturb (a switch) with
// speed_perturb_options.factors, and the waveform chain's first transform,
// waveform_augment.speed {probability, factors}. The switch is probability 1. Loader::Open and
// LoaderConfigJson resolve both to one, so the two spellings give the same batches and the same
// run record.
#pragma once

#include "base/status.h"
#include "loader/options.h"

namespace sluice::loader {

// Moves the older spelling into waveform_augment.speed and resets it (speed_perturb false,
// speed_perturb_options default). InvalidArgument naming both fields when they disagree:
// speed_perturb with a speed.probability other than 0 or 1, or other factors in each.
Status MoveSpeedPerturbIntoChain(LoaderOptions* o);

// The run record's form of `o` (already moved): at probability 1 the older spelling, so that
// records written before the chain took speed in compare equal; below 1 the chain's.
void SpeedPerturbForRecord(LoaderOptions* o);

}  // namespace sluice::loader
