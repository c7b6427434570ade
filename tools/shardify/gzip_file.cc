#include "gzip_file.h"

namespace sluice::shardify {

GzipFile::~GzipFile() {
  if (open_) deflateEnd(&z_);
}

Status GzipFile::Create(const std::string& path, std::unique_ptr<GzipFile>* out) {
  std::unique_ptr<GzipFile> g(new GzipFile);
  SLUICE_RETURN_IF_ERROR(WritableFile::Create(path, &g->file_));
  // 15 + 16: a 32 KiB window with gzip framing; level 6 is gzip's own default.
  if (deflateInit2(&g->z_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return Status::IOError(path + ": cannot start zlib's deflate");
  g->open_ = true;
  g->out_.resize(1 << 16);
  *out = std::move(g);
  return Status::OK();
}

Status GzipFile::Deflate(std::string_view data, int flush) {
  z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z_.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  do {
    z_.next_out = reinterpret_cast<Bytef*>(out_.data());
    z_.avail_out = static_cast<uInt>(out_.size());
    rc = deflate(&z_, flush);
    if (rc == Z_STREAM_ERROR)
      return Status::IOError(file_->path() + ": zlib deflate failed: " + (z_.msg ? z_.msg : "?"));
    const size_t have = out_.size() - z_.avail_out;
    if (have > 0) SLUICE_RETURN_IF_ERROR(file_->Append(std::string_view(out_.data(), have)));
  } while (z_.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  return Status::OK();
}

Status GzipFile::Append(std::string_view data) {
  // uInt counts at most 4 GiB at a time.
  constexpr size_t kPiece = size_t{1} << 30;
  while (!data.empty()) {
    const std::string_view piece = data.substr(0, kPiece);
    SLUICE_RETURN_IF_ERROR(Deflate(piece, Z_NO_FLUSH));
    data.remove_prefix(piece.size());
  }
  return Status::OK();
}

Status GzipFile::Close() {
  if (!open_) return Status::OK();
  open_ = false;
  Status st = Deflate({}, Z_FINISH);
  deflateEnd(&z_);
  if (Status c = file_->Close(); st.ok()) st = c;
  return st;
}

}  // namespace sluice::shardify
