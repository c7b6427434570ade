// Little-endian fixed-width encoding, as in every on-disk sluice format.
// memcpy keeps it free of alignment and aliasing trouble; on x86-64 and
// aarch64 (little-endian) the compiler turns each call into one move.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace sluice::shards {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "sluice formats assume a little-endian host");

inline void PutFixed16(std::string* dst, uint16_t v) {
  dst->append(reinterpret_cast<const char*>(&v), 2);
}
inline void PutFixed32(std::string* dst, uint32_t v) {
  dst->append(reinterpret_cast<const char*>(&v), 4);
}
inline void PutFixed64(std::string* dst, uint64_t v) {
  dst->append(reinterpret_cast<const char*>(&v), 8);
}

inline void EncodeFixed32(char* dst, uint32_t v) { std::memcpy(dst, &v, 4); }
inline void EncodeFixed64(char* dst, uint64_t v) { std::memcpy(dst, &v, 8); }

inline uint16_t DecodeFixed16(const char* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
inline uint32_t DecodeFixed32(const char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline uint64_t DecodeFixed64(const char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

}  // namespace sluice::shards
