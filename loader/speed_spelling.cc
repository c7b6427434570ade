#include "loader/speed_spelling.h"

#include <string>
#include <vector>

namespace sluice::loader {
namespace {

std::string List(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

Status MoveSpeedPerturbIntoChain(LoaderOptions* o) {
  features::SpeedOptions& s = o->waveform_augment.speed;
  const std::vector<double> defaults = features::SpeedPerturbOptions().factors;
  const std::vector<double>& old = o->speed_perturb_options.factors;
  if (o->speed_perturb && s.probability != 0 && s.probability != 1)
    return Status::InvalidArgument(
        "speed_perturb (waveform_augment.speed.probability 1) and "
        "waveform_augment.speed.probability " +
        std::to_string(s.probability) +
        " disagree. HINT: give one of --speed-perturb and --speed-prob");
  // --speed-factors sets the chain's factors; speed_perturb_options.factors comes from JSON or
  // C++ written for the older spelling. One given, it wins; two different ones are refused.
  if (old != defaults) {
    if (s.factors != defaults && s.factors != old)
      return Status::InvalidArgument("speed_perturb_options.factors " + List(old) +
                                     " and waveform_augment.speed.factors " + List(s.factors) +
                                     " disagree. HINT: give the factors once");
    s.factors = old;
  }
  if (o->speed_perturb) s.probability = 1;
  o->speed_perturb = false;
  o->speed_perturb_options = features::SpeedPerturbOptions();
  return Status::OK();
}

void SpeedPerturbForRecord(LoaderOptions* o) {
  features::SpeedOptions& s = o->waveform_augment.speed;
  if (s.probability != 1) return;
  o->speed_perturb = true;
  o->speed_perturb_options.factors = s.factors;
  s = features::SpeedOptions();
}

}  // namespace sluice::loader
