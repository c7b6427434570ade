// JsonValue: a JSON value a struct can hold while its header includes only
// <nlohmann/json_fwd.hpp>. Manifest carries three sub-documents (features, tokenizer, source)
// that shards/ passes on without reading; holding them as nlohmann::json put all of json.hpp
// into every file that includes the manifest, most of which never look at them.
//
// Read and write the value through * and -> in code that includes <nlohmann/json.hpp>. A
// default-constructed (or moved-from) value is JSON null; copies are deep.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>

namespace sluice::shards {

class JsonValue {
 public:
  JsonValue();
  explicit JsonValue(nlohmann::json j);
  JsonValue(const JsonValue& other);
  JsonValue(JsonValue&& other) noexcept;
  JsonValue& operator=(const JsonValue& other);
  JsonValue& operator=(JsonValue&& other) noexcept;
  ~JsonValue();

  const nlohmann::json& operator*() const;
  nlohmann::json& operator*();
  const nlohmann::json* operator->() const { return &**this; }
  nlohmann::json* operator->() { return &**this; }

 private:
  std::unique_ptr<nlohmann::json> value_;  // null: JSON null, allocated when first written
};

}  // namespace sluice::shards
