// The shard layout of docs/formats/shard.md, built by hand from its byte tables (not with
// shards/format.h's structs or shards/coding.h): the writer must produce these bytes exactly,
// and the reader must read them. A change to either side that the spec does not make fails here.
#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "shards/shard_reader.h"
#include "shards/shard_writer.h"
#include "test_util.h"

namespace sluice::shards {
namespace {

// `bytes` little-endian bytes of v, as every integer of the spec.
void Le(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t Xxh3(const std::string& s) { return XXH3_64bits(s.data(), s.size()); }

struct Rec {
  std::string key, payload;
  uint64_t duration;
  uint32_t tokens;
};

// The records of both tests. Block size 100: records 0 and 1 share block 0 (60 + 30 bytes),
// record 2 (70 bytes) would take it past 100 and opens block 1.
const std::vector<Rec> kRecs = {{"utt-a", std::string(60, 'a'), 16000, 3},
                                {"b", std::string(30, 'b'), 7, 0},
                                {"utt-ccc", std::string(70, 'c'), 1ull << 40, 70000}};

struct HandBuilt {
  std::string bytes;
  std::string footer;
};

// kRecs as the spec lays them out, with `aux_area` (the spec's aux area bytes, or "") after the
// keys and `columns_area` (or "") after that.
HandBuilt Build(const std::string& aux_area, const std::string& columns_area = "") {
  const std::vector<Rec>& recs = kRecs;
  const std::vector<std::vector<size_t>> blocks = {{0, 1}, {2}};
  std::string want;
  // Header: magic "SLUICESH" | version 1 | reserved 0.
  want += "SLUICESH";
  Le(&want, 1, 4);
  Le(&want, 0, 4);
  // Blocks: one zstd frame each (zstd level 3, the writer's default), back to back.
  std::string block_table, record_table, keys;
  for (size_t b = 0; b < blocks.size(); ++b) {
    std::string raw;
    for (size_t i : blocks[b]) {
      Le(&record_table, b, 4);           // block
      Le(&record_table, raw.size(), 4);  // offset inside the raw block
      Le(&record_table, recs[i].payload.size(), 4);
      Le(&record_table, keys.size(), 4);         // key_offset
      Le(&record_table, recs[i].key.size(), 4);  // key_size
      Le(&record_table, recs[i].tokens, 4);
      Le(&record_table, recs[i].duration, 8);
      raw += recs[i].payload;
      keys += recs[i].key;
    }
    std::string frame(ZSTD_compressBound(raw.size()), '\0');
    frame.resize(ZSTD_compress(frame.data(), frame.size(), raw.data(), raw.size(), 3));
    Le(&block_table, want.size(), 8);   // offset
    Le(&block_table, frame.size(), 4);  // compressed_size
    Le(&block_table, raw.size(), 4);    // raw_size
    Le(&block_table, Xxh3(frame), 8);   // checksum of the compressed bytes
    want += frame;
  }
  // Index: "SLIX" | num_blocks u32 | num_records u64 | key_bytes u64 | aux_bytes u64, then the
  // block table, the record table, the keys, the aux area and the columns area (the rest).
  const uint64_t index_offset = want.size();
  std::string index = "SLIX";
  Le(&index, blocks.size(), 4);
  Le(&index, recs.size(), 8);
  Le(&index, keys.size(), 8);
  Le(&index, aux_area.size(), 8);
  index += block_table + record_table + keys + aux_area + columns_area;
  EXPECT_EQ(index.size(), 32 + 24 * blocks.size() + 32 * recs.size() + keys.size() +
                              aux_area.size() + columns_area.size());
  want += index;
  // Footer: index_offset | index_size | index_xxh3 | flags 0 | version 1 | footer_xxh3 of
  // bytes 0..31 | magic.
  std::string footer;
  Le(&footer, index_offset, 8);
  Le(&footer, index.size(), 8);
  Le(&footer, Xxh3(index), 8);
  Le(&footer, 0, 4);
  Le(&footer, 1, 4);
  Le(&footer, Xxh3(footer), 8);
  footer += "SLUICESH";
  EXPECT_EQ(footer.size(), 48u);
  want += footer;
  return {want, footer};
}

// The writer's bytes for kRecs, with per-record aux bytes and column values when given.
std::string Write(const std::vector<std::string>& aux, ShardStats* stats,
                  const std::vector<ColumnSpec>& columns = {},
                  const std::vector<std::vector<ColumnValue>>& values = {}) {
  testing::TempDir dir;
  ShardWriterOptions opt;
  opt.block_size = 100;
  opt.columns = columns;
  std::unique_ptr<ShardWriter> w;
  EXPECT_OK(ShardWriter::Create(dir.Join("s.sluice"), opt, &w));
  for (size_t i = 0; i < kRecs.size(); ++i) {
    const Rec& r = kRecs[i];
    RecordMeta meta{r.key, r.duration, r.tokens, aux.empty() ? "" : aux[i]};
    if (!values.empty()) meta.columns = values[i];
    EXPECT_OK(w->Add(meta, r.payload));
  }
  EXPECT_OK(w->Finish(stats));
  return testing::ReadFile(dir.Join("s.sluice"));
}

void ExpectSameBytes(const std::string& got, const std::string& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "first difference at byte " << i;
}

TEST(ShardLayout, HandBuiltShardMatchesTheWriterByteForByte) {
  const HandBuilt want = Build("");
  ShardStats stats;
  ExpectSameBytes(Write({}, &stats), want.bytes);
  EXPECT_EQ(stats.footer_xxh3, Xxh3(want.footer));

  // And the reader takes the hand-built bytes for what the tables say they are.
  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(NewMemoryFile("hand.sluice", want.bytes), {}, Xxh3(want.footer), &r));
  ASSERT_EQ(r->num_blocks(), 2u);
  ASSERT_EQ(r->num_records(), 3u);
  EXPECT_EQ(r->first_record(1), 2u);
  EXPECT_FALSE(r->has_aux());
  for (size_t i = 0; i < kRecs.size(); ++i) {
    std::string payload;
    ASSERT_OK(r->ReadRecord(i, &payload));
    EXPECT_EQ(payload, kRecs[i].payload);
    EXPECT_EQ(r->key(i), kRecs[i].key);
    EXPECT_EQ(r->record(i).duration, kRecs[i].duration);
    EXPECT_EQ(r->record(i).tokens, kRecs[i].tokens);
  }
}

// Aux area: offsets u32 [R + 1] (0, then where each record's bytes end) | data.
std::string AuxArea(const std::vector<uint64_t>& offsets, const std::string& data) {
  std::string a;
  for (uint64_t o : offsets) Le(&a, o, 4);
  return a + data;
}

TEST(ShardLayout, HandBuiltAuxAreaMatchesTheWriterByteForByte) {
  const std::vector<std::string> aux = {"xyz", "", "0123456"};
  const HandBuilt want = Build(AuxArea({0, 3, 3, 10}, "xyz0123456"));
  ShardStats stats;
  ExpectSameBytes(Write(aux, &stats), want.bytes);
  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(NewMemoryFile("hand.sluice", want.bytes), {}, Xxh3(want.footer), &r));
  ASSERT_TRUE(r->has_aux());
  for (size_t i = 0; i < aux.size(); ++i) EXPECT_EQ(r->aux(i), aux[i]) << "record " << i;
}

TEST(ShardLayout, InconsistentAuxOffsetsAreCorruption) {
  // Checksums are right (the hand builder computes them): only the offsets are wrong.
  for (const auto& [offsets, data] : std::vector<std::pair<std::vector<uint64_t>, std::string>>{
           {{1, 3, 3, 10}, "xyz0123456"},     // does not start at 0
           {{0, 5, 3, 10}, "xyz0123456"},     // decreases
           {{0, 3, 3, 9}, "xyz0123456"},      // does not end at the data's size
           {{0, 3, 3, 11}, "xyz0123456"}}) {  // past the data
    const HandBuilt bad = Build(AuxArea(offsets, data));
    std::unique_ptr<ShardReader> r;
    Status st = ShardReader::Open(NewMemoryFile("bad.sluice", bad.bytes), {}, std::nullopt, &r);
    EXPECT_TRUE(st.IsCorruption()) << offsets[0] << " " << offsets[1] << " " << offsets[3];
    EXPECT_NE(st.message().find("aux offset"), std::string::npos) << st.message();
  }
  // Shorter than its offsets table.
  std::unique_ptr<ShardReader> r;
  Status st = ShardReader::Open(NewMemoryFile("bad.sluice", Build(AuxArea({0, 0}, "")).bytes), {},
                                std::nullopt, &r);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("shorter than its offsets table"), std::string::npos) << st.message();
}

// Columns area: "SLCO" | count u32, then per column: type u8 | flags u8 | reserved u16 |
// name_size u32 | dict_count u32 | dict_bytes u32 | name | values.
std::string ColumnHeader(int type, int flags, const std::string& name, uint64_t dict_count,
                         uint64_t dict_bytes) {
  std::string c;
  Le(&c, type, 1);
  Le(&c, flags, 1);
  Le(&c, 0, 2);
  Le(&c, name.size(), 4);
  Le(&c, dict_count, 4);
  Le(&c, dict_bytes, 4);
  return c + name;
}

// kRecs' columns: speaker "spk1", null, "spk1" (a string: dictionary {"spk1"}, codes 0, ~0, 0);
// language never set (all null: no values); age 31, null, -2 (int); rate 0.5, 1e300, null (float).
std::string ColumnsArea() {
  std::string a = "SLCO";
  Le(&a, 4, 4);
  a += ColumnHeader(3, 0, "speaker", 1, 4);
  Le(&a, 4, 4);  // dictionary entry 0 ends at byte 4
  a += "spk1";
  for (uint64_t code : {0ull, 0xffffffffull, 0ull}) Le(&a, code, 4);
  a += ColumnHeader(3, 1, "language", 0, 0);
  a += ColumnHeader(1, 0, "age", 0, 0);
  for (int64_t v : {int64_t{31}, INT64_MIN, int64_t{-2}}) Le(&a, static_cast<uint64_t>(v), 8);
  a += ColumnHeader(2, 0, "rate", 0, 0);
  for (double v : {0.5, 1e300, std::numeric_limits<double>::quiet_NaN()}) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    Le(&a, bits, 8);
  }
  return a;
}

ColumnValue Str(const std::string& s) { return {false, 0, 0, s}; }
ColumnValue Int(int64_t i) { return {false, i, 0, ""}; }
ColumnValue Flt(double f) { return {false, 0, f, ""}; }

TEST(ShardLayout, HandBuiltColumnsAreaMatchesTheWriterByteForByte) {
  const std::vector<ColumnSpec> specs = {{"speaker", ColumnType::kString},
                                         {"language", ColumnType::kString},
                                         {"age", ColumnType::kInt},
                                         {"rate", ColumnType::kFloat}};
  const ColumnValue null;
  const std::vector<std::vector<ColumnValue>> values = {{Str("spk1"), null, Int(31), Flt(0.5)},
                                                        {null, null, null, Flt(1e300)},
                                                        {Str("spk1"), null, Int(-2), null}};
  const HandBuilt want = Build("", ColumnsArea());
  ShardStats stats;
  ExpectSameBytes(Write({}, &stats, specs, values), want.bytes);

  std::unique_ptr<ShardReader> r;
  ASSERT_OK(ShardReader::Open(NewMemoryFile("hand.sluice", want.bytes), {}, Xxh3(want.footer), &r));
  EXPECT_FALSE(r->has_aux());
  const ColumnTable& t = r->columns();
  ASSERT_EQ(t.specs(), specs);
  const Column& spk = t.columns[0];
  EXPECT_EQ(spk.string_at(0), "spk1");
  EXPECT_TRUE(spk.is_null(1));
  EXPECT_EQ(spk.string_at(2), "spk1");
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(t.columns[1].is_null(i)) << i;
  EXPECT_EQ(t.columns[2].int_at(0), 31);
  EXPECT_TRUE(t.columns[2].is_null(1));
  EXPECT_EQ(t.columns[2].int_at(2), -2);
  EXPECT_EQ(t.columns[3].float_at(1), 1e300);
  EXPECT_TRUE(t.columns[3].is_null(2));
}

TEST(ShardLayout, ColumnsAfterAnAuxAreaMatchTheWriterByteForByte) {
  const std::vector<ColumnSpec> specs = {{"speaker", ColumnType::kString}};
  std::string area = "SLCO";
  Le(&area, 1, 4);
  area += ColumnHeader(3, 0, "speaker", 2, 3);
  Le(&area, 1, 4);
  Le(&area, 3, 4);
  area += "abc";
  for (uint64_t code : {0ull, 1ull, 1ull}) Le(&area, code, 4);
  const HandBuilt want = Build(AuxArea({0, 3, 3, 10}, "xyz0123456"), area);
  ShardStats stats;
  ExpectSameBytes(
      Write({"xyz", "", "0123456"}, &stats, specs, {{Str("a")}, {Str("bc")}, {Str("bc")}}),
      want.bytes);
}

TEST(ShardLayout, InconsistentColumnsAreaIsCorruption) {
  const std::string good = ColumnsArea();
  struct Case {
    const char* what;
    std::string area;
  };
  std::vector<Case> cases;
  auto patched = [&](size_t at, uint64_t v, int bytes) {
    std::string a = good;
    std::string le;
    Le(&le, v, bytes);
    a.replace(at, bytes, le);
    return a;
  };
  // Offsets in ColumnsArea(): its header 0..8, speaker's header 8..24, its name 24..31, its
  // dictionary ends 31..35, "spk1" 35..39, its codes 39..51.
  cases.push_back({"bad magic", patched(0, 0x12345678, 4)});
  cases.push_back({"column count", patched(4, 0, 4)});
  cases.push_back({"unknown type", patched(8, 4, 1)});
  cases.push_back({"reserved bits", patched(9, 2, 1)});
  cases.push_back({"name size", patched(12, 0, 4)});
  cases.push_back({"past the", patched(31, 5, 4)});             // dictionary entry past its bytes
  cases.push_back({"past the dictionary", patched(39, 1, 4)});  // code 1 of a 1-entry dictionary
  std::string twice = "SLCO";
  Le(&twice, 2, 4);
  twice += ColumnHeader(1, 1, "a", 0, 0) + ColumnHeader(2, 1, "a", 0, 0);
  cases.push_back({"used twice", twice});
  cases.push_back({"after the last column", good + "x"});
  cases.push_back({"run past", good.substr(0, good.size() - 1)});
  for (const Case& c : cases) {
    const HandBuilt bad = Build("", c.area);
    std::unique_ptr<ShardReader> r;
    Status st = ShardReader::Open(NewMemoryFile("bad.sluice", bad.bytes), {}, std::nullopt, &r);
    EXPECT_TRUE(st.IsCorruption()) << c.what << ": " << st.ToString();
    EXPECT_NE(st.message().find("columns area"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(c.what), std::string::npos) << c.what << ": " << st.message();
  }
}

}  // namespace
}  // namespace sluice::shards
