#include "loader/resume.h"

#include <nlohmann/json.hpp>

namespace sluice::loader {
namespace {

// A world size a JSON value can hold: a positive int (the loader's own type).
bool IsWorld(const nlohmann::json& j) {
  return j.is_number_unsigned() && j.get<uint64_t>() >= 1 && j.get<uint64_t>() <= (1u << 30);
}

}  // namespace

std::string ResumeState::ToJson() const {
  nlohmann::json j{{"epoch", epoch}, {"batches", batches}};
  if (world > 0) j["world"] = world;
  if (!earlier.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const WorldSegment& s : earlier)
      list.push_back({{"world", s.world}, {"batches", s.batches}});
    j["earlier"] = std::move(list);
  }
  return j.dump();
}

Status ResumeState::FromJson(const std::string& text, ResumeState* out) {
  const auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("resume state: " + why + ", got '" + text.substr(0, 200) + "'");
  };
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("epoch") || !j.contains("batches") ||
      !j["epoch"].is_number_unsigned() || !j["batches"].is_number_unsigned())
    return bad("expected {\"epoch\": N, \"batches\": N}");
  ResumeState s;
  s.epoch = j["epoch"].get<uint64_t>();
  s.batches = j["batches"].get<uint64_t>();
  if (j.contains("world")) {
    if (!IsWorld(j["world"])) return bad("\"world\" must be a rank count >= 1");
    s.world = j["world"].get<int>();
  }
  if (j.contains("earlier")) {
    const nlohmann::json& list = j["earlier"];
    if (!list.is_array()) return bad("\"earlier\" must be a list of {\"world\", \"batches\"}");
    if (list.size() > kMaxSegments)
      return bad(std::to_string(list.size()) + " earlier world sizes, over the limit of " +
                 std::to_string(kMaxSegments));
    for (const nlohmann::json& e : list) {
      if (!e.is_object() || !e.contains("world") || !IsWorld(e["world"]) ||
          !e.contains("batches") || !e["batches"].is_number_unsigned())
        return bad("each of \"earlier\" must be {\"world\": W >= 1, \"batches\": N}");
      s.earlier.push_back({e["world"].get<int>(), e["batches"].get<uint64_t>()});
    }
  }
  *out = std::move(s);
  return Status::OK();
}

}  // namespace sluice::loader
