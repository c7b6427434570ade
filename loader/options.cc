#include "loader/options.h"

namespace sluice::loader {

bool ParseFeatureKind(std::string_view name, FeatureKind* out) {
  if (name == "fbank") *out = FeatureKind::kFbank;
  else if (name == "spectrogram") *out = FeatureKind::kSpectrogram;
  else if (name == "raw") *out = FeatureKind::kRaw;
  else if (name == "precomputed") *out = FeatureKind::kPrecomputed;
  else return false;
  return true;
}

const char* FeatureKindName(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kFbank: return "fbank";
    case FeatureKind::kSpectrogram: return "spectrogram";
    case FeatureKind::kRaw: return "raw";
    case FeatureKind::kPrecomputed: return "precomputed";
  }
  return "?";
}

bool ParseDType(std::string_view name, DType* out) {
  if (name == "f32" || name == "float32") *out = DType::kFloat32;
  else if (name == "f16" || name == "float16") *out = DType::kFloat16;
  else if (name == "bf16" || name == "bfloat16") *out = DType::kBFloat16;
  else return false;
  return true;
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
