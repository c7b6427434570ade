#include "loader/resume.h"

#include <nlohmann/json.hpp>

namespace sluice::loader {

std::string ResumeState::ToJson() const {
  return nlohmann::json{{"epoch", epoch}, {"batches", batches}}.dump();
}

Status ResumeState::FromJson(const std::string& text, ResumeState* out) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("epoch") || !j.contains("batches") ||
      !j["epoch"].is_number_unsigned() || !j["batches"].is_number_unsigned())
    return Status::InvalidArgument("resume state: expected {\"epoch\": N, \"batches\": N}, got '" +
                                   text.substr(0, 200) + "'");
  out->epoch = j["epoch"].get<uint64_t>();
  out->batches = j["batches"].get<uint64_t>();
  return Status::OK();
}

}  // namespace sluice::loader
