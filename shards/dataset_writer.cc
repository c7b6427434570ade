#include "shards/dataset_writer.h"

#include <cstdio>

namespace sluice::shards {

std::string ShardFileName(uint32_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "shard-%05u.sluice", index);
  return buf;
}

DatasetWriter::DatasetWriter(std::string dir, DatasetWriterOptions options, ShardDone on_shard_done)
    : dir_(std::move(dir)),
      options_(options),
      on_shard_done_(std::move(on_shard_done)),
      next_index_(options.first_shard_index) {}

DatasetWriter::~DatasetWriter() = default;

uint64_t DatasetWriter::pending_records() const { return current_ ? current_->num_records() : 0; }

std::pair<uint32_t, uint64_t> DatasetWriter::NextPosition() const {
  if (!current_) return {next_index_, 0};
  return {next_index_ - 1, current_->num_records()};
}

Status DatasetWriter::Add(const RecordMeta& meta, std::string_view payload) {
  if (!current_) {
    current_name_ = ShardFileName(next_index_++);
    SLUICE_RETURN_IF_ERROR(
        ShardWriter::Create(dir_ + "/" + current_name_, options_.shard, &current_));
  }
  SLUICE_RETURN_IF_ERROR(current_->Add(meta, payload));
  if (!in_group_ && current_->EstimatedFileBytes() >= options_.shard_size)
    SLUICE_RETURN_IF_ERROR(CloseShard());
  return Status::OK();
}

Status DatasetWriter::EndGroup() {
  in_group_ = false;
  if (current_ && current_->EstimatedFileBytes() >= options_.shard_size)
    SLUICE_RETURN_IF_ERROR(CloseShard());
  return Status::OK();
}

Status DatasetWriter::EndBlock() { return current_ ? current_->EndBlock() : Status::OK(); }

Status DatasetWriter::CloseShard() {
  ShardStats st;
  SLUICE_RETURN_IF_ERROR(current_->Finish(&st));
  current_.reset();
  ShardEntry e;
  e.file = current_name_;
  e.records = st.records;
  e.bytes = st.file_bytes;
  e.raw_bytes = st.raw_bytes;
  e.duration = st.duration;
  e.tokens = st.tokens;
  e.xxh3 = st.file_xxh3;
  e.footer_xxh3 = st.footer_xxh3;
  shards_.push_back(e);
  if (on_shard_done_) SLUICE_RETURN_IF_ERROR(on_shard_done_(e));
  return Status::OK();
}

Status DatasetWriter::Finish() {
  if (current_) SLUICE_RETURN_IF_ERROR(CloseShard());
  return Status::OK();
}

}  // namespace sluice::shards
