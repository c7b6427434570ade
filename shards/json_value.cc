#include "shards/json_value.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace sluice::shards {

JsonValue::JsonValue() = default;
JsonValue::JsonValue(nlohmann::json j) : value_(std::make_unique<nlohmann::json>(std::move(j))) {}
JsonValue::JsonValue(const JsonValue& other)
    : value_(other.value_ ? std::make_unique<nlohmann::json>(*other.value_) : nullptr) {}
JsonValue::JsonValue(JsonValue&& other) noexcept = default;
JsonValue::~JsonValue() = default;

JsonValue& JsonValue::operator=(const JsonValue& other) {
  if (this != &other) **this = *other;
  return *this;
}

JsonValue& JsonValue::operator=(JsonValue&& other) noexcept = default;

const nlohmann::json& JsonValue::operator*() const {
  static const nlohmann::json kNull;
  return value_ ? *value_ : kNull;
}

nlohmann::json& JsonValue::operator*() {
  if (!value_) value_ = std::make_unique<nlohmann::json>();
  return *value_;
}

}  // namespace sluice::shards
