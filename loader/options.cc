#include "loader/options.h"

#include <algorithm>
#include <cstdlib>

#include "loader/mix.h"
#include "storage/url.h"

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

Status ParseMixSource(const std::string& spec, MixSource* out) {
  const size_t colon = spec.rfind(':');
  MixSource s{spec, 1.0};
  // "http://host:8080" (a dataset at a server's root): that number is the port, not a weight;
  // "http://host:8080:2" and "http://host:8080/ds:2" have a weight.
  bool port = false;
  if (spec.starts_with("http://") || spec.starts_with("https://")) {
    const size_t host = spec.find("://") + 3;
    const size_t path = std::min(spec.find('/', host), spec.size());
    port = colon < path && spec.find(':', host) == colon;
  }
  if (colon != std::string::npos && !port) {
    char* end = nullptr;
    const double w = std::strtod(spec.c_str() + colon + 1, &end);
    if (end != spec.c_str() + colon + 1 && *end == '\0') s = {spec.substr(0, colon), w};
  }
  SLUICE_RETURN_IF_ERROR(CheckMixWeight(s.weight, "--data " + storage::RedactUrl(spec)));
  if (s.dir.empty())
    return Status::InvalidArgument("--data " + storage::RedactUrl(spec) + ": no dataset");
  *out = std::move(s);
  return Status::OK();
}

}  // namespace sluice::loader
