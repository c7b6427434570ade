// The merge step of byte-level BPE: a pre-token's bytes (or characters) in, token ids out, with
// merges applied lowest rank first (leftmost among equals), as HF tokenizers' BPE model and
// tiktoken's byte_pair_merge do. Results are cached per pre-token in a bounded cache shared by
// all threads. bpe_tokenizer.cc builds the pre-tokens; tokenizer_json.cc and tiktoken_file.cc
// fill BpeModelSpec.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace sluice::features {

struct BpeModelSpec {
  std::string name;  // the file, for errors
  // true: symbols start as single bytes and `vocab` holds each token's raw bytes (HF ByteLevel
  // tokenizers, tiktoken); false: symbols start as UTF-8 characters and `vocab` holds the
  // tokens as written.
  bool byte_symbols = true;
  std::vector<std::pair<std::string, int32_t>> vocab;
  // HF: the merges in rank order, as ids (left, right). tiktoken has none: merges_from_ranks.
  std::vector<std::pair<int32_t, int32_t>> merges;
  // tiktoken: any two adjacent tokens whose concatenation is a token merge, ranked by that
  // token's id.
  bool merges_from_ranks = false;
  bool ignore_merges = false;  // a pre-token that is a token is that token, merges unused
  bool byte_fallback = false;  // a missing character becomes its bytes' <0xXX> tokens
  int32_t unk_id = -1;         // else <unk> (fuse_unk: consecutive ones as one), else an error
  bool fuse_unk = false;
};

class BpeModel {
 public:
  static Status Create(BpeModelSpec spec, std::unique_ptr<BpeModel>* out);

  // Appends the ids of one pre-token. InvalidArgument when a character has no token and there
  // is neither byte fallback nor <unk>. Thread-safe.
  Status Encode(std::string_view piece, std::vector<int32_t>* ids) const;

  // The id of a token given as its raw bytes (byte_symbols) or text, or -1.
  int32_t Find(std::string_view token) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t id;
  };
  // Token bytes -> id by open addressing, the bytes in one arena: a lookup is one probe of a
  // 24-byte slot and one compare, what the whole-pre-token lookup and the cache miss path cost.
  class TokenTable {
   public:
    void Reserve(size_t n);
    // False when `token` is in the table already.
    bool Insert(std::string_view token, int32_t id);
    int32_t Find(std::string_view token) const;

   private:
    struct Slot {
      uint64_t hash = 0;
      uint32_t offset = 0;
      uint32_t len = 0;
      int32_t id = -1;  // -1: empty
    };
    void Grow();
    std::vector<Slot> slots_;
    std::string arena_;
    size_t used_ = 0;
  };

  // Open addressing over (left << 32 | right): the pair lookups are the merge loop's cost.
  class PairTable {
   public:
    void Build(const std::vector<std::pair<uint64_t, Merge>>& pairs);
    const Merge* Find(int32_t a, int32_t b) const;

   private:
    static uint64_t Mix(uint64_t k) {
      k ^= k >> 33;
      k *= 0xff51afd7ed558ccdULL;
      k ^= k >> 33;
      return k;
    }
    std::vector<uint64_t> keys_;
    std::vector<Merge> values_;
    uint64_t mask_ = 0;
  };

  // Bounded and direct-mapped: kShards shards of kSlots entries, each holding one pre-token of
  // up to kMaxPieceBytes bytes with up to kMaxIds ids (longer ones, rare, are not cached); a new
  // pre-token replaces the one in its slot. 4 MiB per tokenizer, one 64-byte entry per lookup.
  class Cache {
   public:
    static constexpr size_t kShards = 64;
    static constexpr size_t kSlots = 1024;
    static constexpr size_t kMaxPieceBytes = 22;
    static constexpr size_t kMaxIds = 8;
    Cache();
    bool Get(std::string_view piece, uint64_t hash, std::vector<int32_t>* ids) const;
    void Put(std::string_view piece, uint64_t hash, const int32_t* ids, size_t n) const;

   private:
    struct alignas(64) Entry {
      uint64_t hash;
      uint8_t len;  // 0: empty (an empty pre-token is never looked up)
      uint8_t n;
      char key[kMaxPieceBytes];
      int32_t ids[kMaxIds];
    };
    struct Shard {
      std::mutex mu;
      std::unique_ptr<Entry[]> entries;
    };
    mutable std::array<Shard, kShards> shards_;
  };

  Status InitialSymbols(std::string_view piece, std::vector<int32_t>* symbols) const;
  void MergeSymbols(std::vector<int32_t>* symbols) const;
  void MergeSymbolsWithHeap(std::vector<int32_t>* symbols) const;

  BpeModelSpec spec_;
  TokenTable tokens_;
  std::array<int32_t, 256> byte_ids_;      // byte_symbols: the token of each single byte, or -1
  std::array<int32_t, 256> fallback_ids_;  // <0xXX>, or -1
  PairTable pairs_;
  Cache cache_;
};

}  // namespace sluice::features
