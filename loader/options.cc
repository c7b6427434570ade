#include "loader/options.h"

namespace sluice::loader {

const char* FeatureKindName(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kFbank: return "fbank";
    case FeatureKind::kSpectrogram: return "spectrogram";
    case FeatureKind::kRaw: return "raw";
    case FeatureKind::kPrecomputed: return "precomputed";
  }
  return "?";
}

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
  }
  return "?";
}

size_t DTypeSize(DType t) { return t == DType::kFloat32 ? 4 : 2; }

}  // namespace sluice::loader
