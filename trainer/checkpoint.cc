#include "trainer/checkpoint.h"

#include <bit>
#include <cstring>

#include "base/file.h"
#include "shards/checksum.h"
#include "trainer/checkpoint_format.h"

namespace sluice::train {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the checkpoint is little-endian and written with memcpy");

class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  template <typename T>
  void Put(T v) { Bytes(&v, sizeof(v)); }
  void Bytes(const void* p, size_t n) { out_->append(static_cast<const char*>(p), n); }
  void Floats(const std::vector<float>& v) { Bytes(v.data(), v.size() * sizeof(float)); }
  // Starts a section; returns where its length goes, filled in by EndSection.
  size_t BeginSection(const char (&tag)[4]) {
    Bytes(tag, 4);
    Put<uint32_t>(0);
    const size_t at = out_->size();
    Put<uint64_t>(0);
    return at;
  }
  void EndSection(size_t length_at) {
    const uint64_t length = out_->size() - length_at - 8;
    std::memcpy(out_->data() + length_at, &length, 8);
    out_->append((ckpt::kAlignment - out_->size() % ckpt::kAlignment) % ckpt::kAlignment, '\0');
  }

 private:
  std::string* out_;
};

// Reads a section payload or the header; every read checks the bounds.
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& name, uint64_t base)
      : bytes_(bytes), name_(name), base_(base) {}
  template <typename T>
  Status Get(T* v, const char* what) {
    return Bytes(v, sizeof(T), what);
  }
  Status Bytes(void* p, size_t n, const char* what) {
    if (n > bytes_.size() - pos_)
      return Error(std::string(what) + " runs past the end of its section");
    if (n > 0) std::memcpy(p, bytes_.data() + pos_, n);  // p is null for an empty vector
    pos_ += n;
    return Status::OK();
  }
  Status Floats(uint64_t count, std::vector<float>* v, const char* what) {
    if (count > (bytes_.size() - pos_) / sizeof(float))
      return Error(std::string(what) + ": " + std::to_string(count) +
                   " floats do not fit in the section");
    v->resize(count);
    return Bytes(v->data(), count * sizeof(float), what);
  }
  Status Done(const char* section) {
    if (pos_ != bytes_.size())
      return Error(std::string(section) + " section has " + std::to_string(bytes_.size() - pos_) +
                   " unread bytes");
    return Status::OK();
  }
  Status Error(const std::string& what) const {
    return Status::Corruption(name_ + ": offset " + std::to_string(base_ + pos_) + ": " + what);
  }
  std::string_view rest() const { return bytes_.substr(pos_); }

 private:
  std::string_view bytes_;
  const std::string& name_;
  uint64_t base_;  // file offset of bytes_[0], for messages
  size_t pos_ = 0;
};

std::string TagName(const char* tag) { return std::string(tag, 4); }

// Splits the next section off `file` at *offset: its payload into *payload.
Status NextSection(std::string_view file, const std::string& name, const char (&tag)[4],
                   uint64_t end, uint64_t* offset, std::string_view* payload) {
  const std::string where = name + ": offset " + std::to_string(*offset) + ": ";
  if (end - *offset < ckpt::kSectionHeaderBytes)
    return Status::Corruption(where + "missing section " + TagName(tag));
  const char* p = file.data() + *offset;
  if (std::memcmp(p, tag, 4) != 0)
    return Status::Corruption(where + "expected section " + TagName(tag) + ", found '" +
                              TagName(p) + "'");
  uint32_t reserved;
  uint64_t length;
  std::memcpy(&reserved, p + 4, 4);
  std::memcpy(&length, p + 8, 8);
  if (reserved != 0)
    return Status::Corruption(where + "reserved field of section " + TagName(tag) + " is not 0");
  const uint64_t start = *offset + ckpt::kSectionHeaderBytes;
  if (length > end - start)
    return Status::Corruption(where + "section " + TagName(tag) + " of " + std::to_string(length) +
                              " bytes runs past the footer");
  *payload = file.substr(start, length);
  *offset = start + length + (ckpt::kAlignment - length % ckpt::kAlignment) % ckpt::kAlignment;
  return Status::OK();
}

Status ParseJson(std::string_view text, const std::string& name, const char* section,
                 nlohmann::json* out) {
  try {
    *out = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(name + ": section " + section + ": invalid JSON: " + e.what());
  }
  return Status::OK();
}

}  // namespace

uint64_t TokenizerFingerprint(const nlohmann::json& description) {
  const std::string canonical = description.dump();  // nlohmann sorts object keys
  return shards::Checksum(canonical.data(), canonical.size());
}

Status EncodeCheckpoint(const Checkpoint& c, std::string* bytes) {
  if (c.adam_m.size() != c.params.size() || c.adam_v.size() != c.params.size())
    return Status::InvalidArgument("checkpoint: optimizer state has " +
                                   std::to_string(c.adam_m.size()) + "/" +
                                   std::to_string(c.adam_v.size()) + " values for " +
                                   std::to_string(c.params.size()) + " parameters");
  bytes->clear();
  Writer w(bytes);
  w.Bytes(ckpt::kMagic, 8);
  w.Put<uint32_t>(ckpt::kVersion);
  w.Put<uint32_t>(0);  // flags, reserved
  w.Put<uint64_t>(0);  // file bytes, patched below
  w.Put<uint32_t>(6);  // sections
  w.Put<uint32_t>(0);  // reserved

  size_t at = w.BeginSection(ckpt::kConfigTag);
  const std::string config = c.config.dump();
  w.Bytes(config.data(), config.size());
  w.EndSection(at);

  at = w.BeginSection(ckpt::kTokenizerTag);
  w.Put<uint64_t>(c.tokenizer_fingerprint);
  w.Put<int32_t>(c.vocab);
  w.Put<uint32_t>(0);
  w.EndSection(at);

  at = w.BeginSection(ckpt::kParamsTag);
  w.Put<uint64_t>(c.params.size());
  w.Floats(c.params);
  w.EndSection(at);

  at = w.BeginSection(ckpt::kAdamTag);
  w.Put<int64_t>(c.adam_step);
  w.Put<uint64_t>(c.adam_m.size());
  w.Floats(c.adam_m);
  w.Floats(c.adam_v);
  w.EndSection(at);

  at = w.BeginSection(ckpt::kLoaderTag);
  const std::string resume = c.loader.ToJson();
  w.Bytes(resume.data(), resume.size());
  w.EndSection(at);

  at = w.BeginSection(ckpt::kCountersTag);
  w.Put<uint64_t>(c.counters.step);
  w.Put<uint64_t>(c.counters.seed);
  w.Put<uint64_t>(c.counters.utterances);
  w.Put<double>(c.counters.audio_seconds);
  w.Put<double>(c.counters.epoch_loss_sum);
  w.Put<uint64_t>(c.counters.epoch_steps);
  w.EndSection(at);

  const uint64_t file_bytes = bytes->size() + ckpt::kFooterBytes;
  std::memcpy(bytes->data() + 16, &file_bytes, 8);
  w.Put<uint64_t>(shards::Checksum(bytes->data(), bytes->size()));
  w.Bytes(ckpt::kEndMagic, 8);
  return Status::OK();
}

Status DecodeCheckpoint(std::string_view file, const std::string& name, Checkpoint* out) {
  if (file.size() < ckpt::kHeaderBytes || std::memcmp(file.data(), ckpt::kMagic, 8) != 0)
    return Status::Corruption(name +
                              ": not a sluice-train checkpoint (no SLUICECK magic at offset 0). "
                              "HINT: --resume takes a file written by sluice-train --checkpoint");
  uint32_t version, flags, sections, reserved;
  uint64_t file_bytes;
  std::memcpy(&version, file.data() + 8, 4);
  std::memcpy(&flags, file.data() + 12, 4);
  std::memcpy(&file_bytes, file.data() + 16, 8);
  std::memcpy(&sections, file.data() + 24, 4);
  std::memcpy(&reserved, file.data() + 28, 4);
  if (version > ckpt::kVersion)
    return Status::Unsupported(name + ": checkpoint version " + std::to_string(version) +
                               ", this sluice-train reads " + std::to_string(ckpt::kVersion) +
                               ". HINT: resume with the sluice-train that wrote it");
  if (version < 1) return Status::Corruption(name + ": checkpoint version 0 is invalid");
  if (file_bytes != file.size())
    return Status::Corruption(name + ": " + (file.size() < file_bytes ? "truncated" : "extended") +
                              ": the header says " + std::to_string(file_bytes) +
                              " bytes, the file has " + std::to_string(file.size()) +
                              " (an interrupted copy?)");
  if (file.size() < ckpt::kHeaderBytes + ckpt::kFooterBytes)
    return Status::Corruption(name + ": " + std::to_string(file.size()) +
                              " bytes is too short for a checkpoint");
  const uint64_t footer = file.size() - ckpt::kFooterBytes;
  uint64_t stored;
  std::memcpy(&stored, file.data() + footer, 8);
  if (std::memcmp(file.data() + footer + 8, ckpt::kEndMagic, 8) != 0)
    return Status::Corruption(name + ": offset " + std::to_string(footer + 8) +
                              ": no SLCKEND end magic");
  const uint64_t computed = shards::Checksum(file.data(), footer);
  if (stored != computed)
    return Status::Corruption(name + ": checksum mismatch (stored " + shards::ChecksumHex(stored) +
                              ", computed " + shards::ChecksumHex(computed) +
                              "): the file is damaged; resume from an older one");
  if (flags != 0 || reserved != 0)
    return Status::Corruption(name + ": reserved header fields are not 0");
  if (sections != 6)
    return Status::Corruption(name + ": " + std::to_string(sections) +
                              " sections, version 1 has 6");

  Checkpoint c;
  uint64_t offset = ckpt::kHeaderBytes;
  std::string_view payload;

  SLUICE_RETURN_IF_ERROR(NextSection(file, name, ckpt::kConfigTag, footer, &offset, &payload));
  SLUICE_RETURN_IF_ERROR(ParseJson(payload, name, "CONF", &c.config));

  SLUICE_RETURN_IF_ERROR(NextSection(file, name, ckpt::kTokenizerTag, footer, &offset, &payload));
  {
    Reader r(payload, name, payload.data() - file.data());
    uint32_t pad;
    SLUICE_RETURN_IF_ERROR(r.Get(&c.tokenizer_fingerprint, "tokenizer fingerprint"));
    SLUICE_RETURN_IF_ERROR(r.Get(&c.vocab, "vocabulary size"));
    SLUICE_RETURN_IF_ERROR(r.Get(&pad, "reserved"));
    SLUICE_RETURN_IF_ERROR(r.Done("TOKN"));
  }

  SLUICE_RETURN_IF_ERROR(NextSection(file, name, ckpt::kParamsTag, footer, &offset, &payload));
  {
    Reader r(payload, name, payload.data() - file.data());
    uint64_t count;
    SLUICE_RETURN_IF_ERROR(r.Get(&count, "parameter count"));
    SLUICE_RETURN_IF_ERROR(r.Floats(count, &c.params, "parameters"));
    SLUICE_RETURN_IF_ERROR(r.Done("PARM"));
  }

  SLUICE_RETURN_IF_ERROR(NextSection(file, name, ckpt::kAdamTag, footer, &offset, &payload));
  {
    Reader r(payload, name, payload.data() - file.data());
    uint64_t count;
    SLUICE_RETURN_IF_ERROR(r.Get(&c.adam_step, "AdamW step"));
    SLUICE_RETURN_IF_ERROR(r.Get(&count, "AdamW count"));
    if (count != c.params.size())
      return r.Error("AdamW state for " + std::to_string(count) + " values, " +
                     std::to_string(c.params.size()) + " parameters");
    SLUICE_RETURN_IF_ERROR(r.Floats(count, &c.adam_m, "AdamW m"));
    SLUICE_RETURN_IF_ERROR(r.Floats(count, &c.adam_v, "AdamW v"));
    SLUICE_RETURN_IF_ERROR(r.Done("ADAM"));
  }

  SLUICE_RETURN_IF_ERROR(NextSection(file, name, ckpt::kLoaderTag, footer, &offset, &payload));
  Status s = loader::ResumeState::FromJson(std::string(payload), &c.loader);
  if (!s.ok()) return Status::Corruption(name + ": section LOAD: " + s.message());

  SLUICE_RETURN_IF_ERROR(NextSection(file, name, ckpt::kCountersTag, footer, &offset, &payload));
  {
    Reader r(payload, name, payload.data() - file.data());
    SLUICE_RETURN_IF_ERROR(r.Get(&c.counters.step, "step"));
    SLUICE_RETURN_IF_ERROR(r.Get(&c.counters.seed, "seed"));
    SLUICE_RETURN_IF_ERROR(r.Get(&c.counters.utterances, "utterances"));
    SLUICE_RETURN_IF_ERROR(r.Get(&c.counters.audio_seconds, "audio seconds"));
    SLUICE_RETURN_IF_ERROR(r.Get(&c.counters.epoch_loss_sum, "epoch loss sum"));
    SLUICE_RETURN_IF_ERROR(r.Get(&c.counters.epoch_steps, "epoch steps"));
    SLUICE_RETURN_IF_ERROR(r.Done("CNTR"));
  }
  if (offset != footer)
    return Status::Corruption(name + ": offset " + std::to_string(offset) + ": " +
                              std::to_string(footer - offset) +
                              " unexpected bytes before the footer");
  *out = std::move(c);
  return Status::OK();
}

Status WriteCheckpoint(const std::string& path, const Checkpoint& c) {
  std::string bytes;
  SLUICE_RETURN_IF_ERROR(EncodeCheckpoint(c, &bytes));
  Status s = WriteFileAtomic(path, bytes);
  if (!s.ok()) return Prefixed(s, "writing checkpoint " + path);
  return Status::OK();
}

Status ReadCheckpoint(const std::string& path, Checkpoint* out) {
  std::string bytes;
  Status s = ReadFileToString(path, &bytes);
  if (!s.ok()) return Prefixed(s, "reading checkpoint " + path);
  return DecodeCheckpoint(bytes, path, out);
}

}  // namespace sluice::train
