#include "features/bpe_model.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <queue>

#include "features/byte_level.h"
#include "features/utf8.h"

namespace sluice::features {
namespace {

constexpr int32_t kNoRank = INT32_MAX;

// Longer pre-tokens go to the heap merge: the rank scan is quadratic in the symbols.
constexpr size_t kMaxQuadraticSymbols = 256;

// A 64-bit hash of short byte strings (pre-tokens average a few bytes): 8 bytes at a time,
// multiply-xorshift mixing (splitmix64's constants).
uint64_t HashBytes(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n * 0xff51afd7ed558ccdULL);
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  uint64_t v = 0;
  std::memcpy(&v, p, n);
  h = (h ^ v) * 0x94d049bb133111ebULL;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 32;
  return h;
}

std::string FallbackToken(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

}  // namespace

void BpeModel::PairTable::Build(const std::vector<std::pair<uint64_t, Merge>>& pairs) {
  size_t cap = 16;
  while (cap < pairs.size() * 2) cap <<= 1;
  keys_.assign(cap, UINT64_MAX);  // (-1, -1) is never a pair of ids
  values_.assign(cap, Merge{kNoRank, -1});
  mask_ = cap - 1;
  for (const auto& [key, merge] : pairs) {
    uint64_t i = Mix(key) & mask_;
    while (keys_[i] != UINT64_MAX && keys_[i] != key) i = (i + 1) & mask_;
    keys_[i] = key;  // a pair listed twice keeps its last merge, as HF's map does
    values_[i] = merge;
  }
}

const BpeModel::Merge* BpeModel::PairTable::Find(int32_t a, int32_t b) const {
  const uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  for (uint64_t i = Mix(key) & mask_;; i = (i + 1) & mask_) {
    if (keys_[i] == key) return &values_[i];
    if (keys_[i] == UINT64_MAX) return nullptr;
  }
}

void BpeModel::TokenTable::Reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap > slots_.size()) {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(cap);
    for (const Slot& s : old) {
      if (s.id < 0) continue;
      size_t i = s.hash & (slots_.size() - 1);
      while (slots_[i].id >= 0) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = s;
    }
  }
}

bool BpeModel::TokenTable::Insert(std::string_view token, int32_t id) {
  if ((used_ + 1) * 2 > slots_.size()) Reserve(used_ + 1);
  const uint64_t h = HashBytes(token);
  size_t i = h & (slots_.size() - 1);
  for (; slots_[i].id >= 0; i = (i + 1) & (slots_.size() - 1)) {
    const Slot& s = slots_[i];
    if (s.hash == h && s.len == token.size() &&
        std::memcmp(arena_.data() + s.offset, token.data(), token.size()) == 0)
      return false;
  }
  slots_[i] = {h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(token.size()), id};
  arena_.append(token);
  ++used_;
  return true;
}

int32_t BpeModel::TokenTable::Find(std::string_view token) const {
  if (slots_.empty()) return -1;
  const uint64_t h = HashBytes(token);
  for (size_t i = h & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.hash == h && s.len == token.size() &&
        std::memcmp(arena_.data() + s.offset, token.data(), token.size()) == 0)
      return s.id;
  }
}

BpeModel::Cache::Cache() {
  for (Shard& s : shards_) {
    s.entries.reset(new Entry[kSlots]);
    for (size_t i = 0; i < kSlots; ++i) s.entries[i].len = 0;
  }
}

bool BpeModel::Cache::Get(std::string_view piece, uint64_t hash, std::vector<int32_t>* ids) const {
  Shard& s = shards_[hash % kShards];
  std::lock_guard<std::mutex> lock(s.mu);
  const Entry& e = s.entries[(hash / kShards) % kSlots];
  if (e.hash != hash || e.len != piece.size() ||
      std::memcmp(e.key, piece.data(), piece.size()) != 0)
    return false;
  ids->insert(ids->end(), e.ids, e.ids + e.n);
  return true;
}

void BpeModel::Cache::Put(std::string_view piece, uint64_t hash, const int32_t* ids,
                          size_t n) const {
  if (n > kMaxIds) return;
  Shard& s = shards_[hash % kShards];
  std::lock_guard<std::mutex> lock(s.mu);
  Entry& e = s.entries[(hash / kShards) % kSlots];
  e.hash = hash;
  e.len = static_cast<uint8_t>(piece.size());
  e.n = static_cast<uint8_t>(n);
  std::memcpy(e.key, piece.data(), piece.size());
  std::copy(ids, ids + n, e.ids);
}

Status BpeModel::Create(BpeModelSpec spec, std::unique_ptr<BpeModel>* out) {
  std::unique_ptr<BpeModel> m(new BpeModel);
  int32_t max_id = -1;
  for (const auto& [token, id] : spec.vocab) max_id = std::max(max_id, id);
  std::vector<const std::string*> by_id(static_cast<size_t>(max_id + 1), nullptr);
  m->tokens_.Reserve(spec.vocab.size());
  for (const auto& [token, id] : spec.vocab) {
    if (id < 0) return Status::Corruption(spec.name + ": negative id for token \"" + token + "\"");
    if (!m->tokens_.Insert(token, id)) {
      return Status::Corruption(spec.name + ": the token \"" + token +
                                "\" is listed twice (hint: the file is damaged)");
    }
    if (by_id[id] != nullptr) {
      return Status::Corruption(spec.name + ": id " + std::to_string(id) + " is given to both \"" +
                                *by_id[id] + "\" and \"" + token + "\"");
    }
    by_id[id] = &token;
  }
  for (int b = 0; b < 256; ++b) {
    m->byte_ids_[b] = spec.byte_symbols ? m->Find(std::string(1, static_cast<char>(b))) : -1;
    m->fallback_ids_[b] = spec.byte_fallback ? m->Find(FallbackToken(b)) : -1;
  }
  std::vector<std::pair<uint64_t, Merge>> pairs;
  auto key = [](int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  };
  if (spec.merges_from_ranks) {
    for (const auto& [token, id] : spec.vocab) {
      for (size_t k = 1; k < token.size(); ++k) {
        const int32_t a = m->Find(std::string_view(token).substr(0, k));
        const int32_t b = m->Find(std::string_view(token).substr(k));
        if (a >= 0 && b >= 0) pairs.emplace_back(key(a, b), Merge{id, id});
      }
    }
  } else {
    pairs.reserve(spec.merges.size());
    for (size_t r = 0; r < spec.merges.size(); ++r) {
      const auto [a, b] = spec.merges[r];
      const std::string merged = *by_id[a] + *by_id[b];
      const int32_t id = m->Find(merged);
      if (id < 0) {
        return Status::Corruption(spec.name + ": merge " + std::to_string(r) + " (\"" + *by_id[a] +
                                  "\" + \"" + *by_id[b] + "\") makes a token the vocabulary lacks");
      }
      pairs.emplace_back(key(a, b), Merge{static_cast<int32_t>(r), id});
    }
  }
  m->pairs_.Build(pairs);
  m->spec_ = std::move(spec);
  m->spec_.vocab.clear();  // held by tokens_ now
  m->spec_.vocab.shrink_to_fit();
  m->spec_.merges.clear();
  m->spec_.merges.shrink_to_fit();
  *out = std::move(m);
  return Status::OK();
}

int32_t BpeModel::Find(std::string_view token) const { return tokens_.Find(token); }

Status BpeModel::InitialSymbols(std::string_view piece, std::vector<int32_t>* symbols) const {
  bool last_unk = false;
  for (size_t pos = 0; pos < piece.size();) {
    const size_t at = pos;
    int32_t id;
    std::string fallback_bytes;  // the character's UTF-8, for byte fallback
    if (spec_.byte_symbols) {
      const auto b = static_cast<uint8_t>(piece[pos++]);
      id = byte_ids_[b];
      if (id < 0) AppendUtf8(ByteLevelChar(b), &fallback_bytes);
    } else {
      NextCodePoint(piece, &pos);
      id = Find(piece.substr(at, pos - at));
      if (id < 0) fallback_bytes = std::string(piece.substr(at, pos - at));
    }
    if (id >= 0) {
      symbols->push_back(id);
      last_unk = false;
      continue;
    }
    if (spec_.byte_fallback) {
      bool all = true;
      for (char c : fallback_bytes) all = all && fallback_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (char c : fallback_bytes) symbols->push_back(fallback_ids_[static_cast<uint8_t>(c)]);
        last_unk = false;
        continue;
      }
    }
    if (spec_.unk_id < 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "byte 0x%02X", static_cast<uint8_t>(piece[at]));
      return Status::InvalidArgument(
          spec_.name + ": no token for " +
          (spec_.byte_symbols ? buf : "\"" + fallback_bytes + "\"") + " at byte " +
          std::to_string(at) + " of the pre-token \"" + std::string(piece.substr(0, 64)) +
          "\", and the model has neither byte_fallback tokens nor an unk_token");
    }
    if (!(spec_.fuse_unk && last_unk)) symbols->push_back(spec_.unk_id);
    last_unk = true;
  }
  return Status::OK();
}

void BpeModel::MergeSymbols(std::vector<int32_t>* symbols) const {
  std::vector<int32_t>& s = *symbols;
  if (s.size() < 2) return;
  if (s.size() > kMaxQuadraticSymbols) return MergeSymbolsWithHeap(symbols);
  // ranks[i], ids[i]: the merge of s[i] and s[i + 1]. Lowest rank first, leftmost among equals.
  int32_t ranks[kMaxQuadraticSymbols], ids[kMaxQuadraticSymbols];
  size_t n = s.size();
  auto load = [&](size_t i) {
    const Merge* m = pairs_.Find(s[i], s[i + 1]);
    ranks[i] = m ? m->rank : kNoRank;
    ids[i] = m ? m->id : -1;
  };
  for (size_t i = 0; i + 1 < n; ++i) load(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i)
      if (ranks[i] < ranks[best]) best = i;
    if (ranks[best] == kNoRank) break;
    s[best] = ids[best];
    std::copy(s.begin() + best + 2, s.begin() + n, s.begin() + best + 1);
    std::copy(ranks + best + 1, ranks + n - 1, ranks + best);
    std::copy(ids + best + 1, ids + n - 1, ids + best);
    --n;
    if (best > 0) load(best - 1);
    if (best + 1 < n) load(best);
  }
  s.resize(n);
}

void BpeModel::MergeSymbolsWithHeap(std::vector<int32_t>* symbols) const {
  std::vector<int32_t>& s = *symbols;
  const size_t n = s.size();
  std::vector<int32_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  struct Item {
    int32_t rank, pos, id;
    bool operator>(const Item& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
  auto push = [&](int32_t pos) {
    if (pos < 0 || next[pos] < 0) return;
    if (const Merge* m = pairs_.Find(s[pos], s[next[pos]])) queue.push({m->rank, pos, m->id});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int32_t>(i));
  while (!queue.empty()) {
    const Item top = queue.top();
    queue.pop();
    if (!alive[top.pos] || next[top.pos] < 0) continue;
    const int32_t right = next[top.pos];
    const Merge* m = pairs_.Find(s[top.pos], s[right]);
    if (m == nullptr || m->id != top.id || m->rank != top.rank) continue;  // stale
    s[top.pos] = top.id;
    alive[right] = false;
    next[top.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = top.pos;
    push(prev[top.pos]);
    push(top.pos);
  }
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (alive[i]) s[k++] = s[i];
  s.resize(k);
}

Status BpeModel::Encode(std::string_view piece, std::vector<int32_t>* ids) const {
  if (piece.empty()) return Status::OK();
  if (spec_.byte_symbols && piece.size() == 1) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(piece[0])];
    if (id >= 0) {
      ids->push_back(id);
      return Status::OK();
    }
  }
  if (spec_.ignore_merges) {
    const int32_t id = Find(piece);
    if (id >= 0) {
      ids->push_back(id);
      return Status::OK();
    }
  }
  const bool cacheable = piece.size() <= Cache::kMaxPieceBytes;
  const uint64_t hash = cacheable ? HashBytes(piece) : 0;
  if (cacheable && cache_.Get(piece, hash, ids)) return Status::OK();
  thread_local std::vector<int32_t> symbols;
  symbols.clear();
  SLUICE_RETURN_IF_ERROR(InitialSymbols(piece, &symbols));
  MergeSymbols(&symbols);
  if (cacheable) cache_.Put(piece, hash, symbols.data(), symbols.size());
  ids->insert(ids->end(), symbols.begin(), symbols.end());
  return Status::OK();
}

}  // namespace sluice::features
