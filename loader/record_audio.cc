#include "loader/record_audio.h"

#include <string>

#include "features/flac.h"

namespace sluice::loader {

Status DecodeFlacField(const shards::FieldView& f, int sample_rate, std::vector<int16_t>* scratch) {
  static const std::string kName = "audio_flac field";
  int rate = 0;
  SLUICE_RETURN_IF_ERROR(features::DecodeFlac(reinterpret_cast<const uint8_t*>(f.data), f.size,
                                              kName, scratch, &rate));
  if (rate != sample_rate)
    return Status::Corruption(kName + ": FLAC at " + std::to_string(rate) + " Hz in a " +
                              std::to_string(sample_rate) + " Hz dataset");
  return Status::OK();
}

}  // namespace sluice::loader
