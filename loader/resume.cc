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
  // Each error names the field as a Python caller indexes it (state['earlier'][0]['world']) and
  // what it must hold, then the whole state as given.
  const auto bad = [&](const std::string& field, const std::string& why) {
    return Status::InvalidArgument("resume state: " + field + ": " + why + " (in '" +
                                   text.substr(0, 200) + "')");
  };
  const auto got = [](const nlohmann::json& v) { return ", got " + v.dump(); };
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return bad("state", "expected an object {\"epoch\": E, \"batches\": N, \"world\": W}");
  // An unsigned count at `key` of `obj`, whose path is `at`.
  const auto count = [&](const nlohmann::json& obj, const char* key, const std::string& at,
                         uint64_t* v) -> Status {
    const std::string field = at + "['" + key + "']";
    if (!obj.contains(key)) return bad(field, "missing");
    if (!obj[key].is_number_unsigned()) return bad(field, "expected an int >= 0" + got(obj[key]));
    *v = obj[key].get<uint64_t>();
    return Status::OK();
  };
  const auto world = [&](const nlohmann::json& obj, const std::string& at, int* v) -> Status {
    const std::string field = at + "['world']";
    if (!obj.contains("world")) return bad(field, "missing");
    if (!IsWorld(obj["world"]))
      return bad(field, "expected a rank count, an int >= 1" + got(obj["world"]));
    *v = obj["world"].get<int>();
    return Status::OK();
  };
  ResumeState s;
  SLUICE_RETURN_IF_ERROR(count(j, "epoch", "state", &s.epoch));
  SLUICE_RETURN_IF_ERROR(count(j, "batches", "state", &s.batches));
  if (j.contains("world")) SLUICE_RETURN_IF_ERROR(world(j, "state", &s.world));
  if (j.contains("earlier")) {
    const nlohmann::json& list = j["earlier"];
    if (!list.is_array())
      return bad("state['earlier']",
                 "expected a list of {\"world\": W, \"batches\": N}" + got(list));
    if (list.size() > kMaxSegments)
      return bad("state['earlier']", std::to_string(list.size()) +
                                         " earlier world sizes, over the limit of " +
                                         std::to_string(kMaxSegments));
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = "state['earlier'][" + std::to_string(i) + "]";
      const nlohmann::json& e = list[i];
      if (!e.is_object())
        return bad(at, "expected an object {\"world\": W, \"batches\": N}" + got(e));
      WorldSegment w;
      SLUICE_RETURN_IF_ERROR(world(e, at, &w.world));
      SLUICE_RETURN_IF_ERROR(count(e, "batches", at, &w.batches));
      s.earlier.push_back(w);
    }
  }
  *out = std::move(s);
  return Status::OK();
}

}  // namespace sluice::loader
