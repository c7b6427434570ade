#include "importers/text_lines.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "base/sysio.h"

namespace sluice::importers {
namespace {

constexpr size_t kChunk = 1 << 16;

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Bytes in; gzip-decoded (or passed through) bytes out, in chunks.
class ByteSource {
 public:
  ByteSource(std::string path, int fd, bool gzip) : path_(std::move(path)), fd_(fd), gzip_(gzip) {
    if (gzip_) {
      std::memset(&z_, 0, sizeof z_);
      inflateInit2(&z_, 16 + MAX_WBITS);
    }
  }
  ~ByteSource() {
    if (gzip_) inflateEnd(&z_);
    if (fd_ >= 0) ::close(fd_);
  }
  // Appends the next bytes to *out; false at the end or on an error (*status).
  bool Read(std::string* out, Status* status) {
    if (!gzip_) return ReadRaw(out, status) > 0;
    while (true) {
      if (z_.avail_in == 0 && !raw_eof_) {
        raw_.clear();
        if (ReadRaw(&raw_, status) < 0) return false;
        z_.next_in = reinterpret_cast<Bytef*>(raw_.data());
        z_.avail_in = static_cast<uInt>(raw_.size());
      }
      if (z_.avail_in == 0 && raw_eof_) {
        if (!stream_end_) {
          *status = Status::Corruption(
              path_ + ": gzip data cut off at compressed byte " + std::to_string(consumed()) +
              ". HINT: the file is incomplete; recompress or copy it again");
        }
        return false;
      }
      if (stream_end_) {
        // Another gzip member follows (concatenated files).
        inflateReset(&z_);
        stream_end_ = false;
      }
      const size_t old = out->size();
      out->resize(old + kChunk);
      z_.next_out = reinterpret_cast<Bytef*>(out->data() + old);
      z_.avail_out = kChunk;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      out->resize(old + kChunk - z_.avail_out);
      if (rc == Z_STREAM_END) {
        stream_end_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        *status = Status::Corruption(
            path_ + ": damaged gzip data at compressed byte " + std::to_string(consumed()) + ": " +
            (z_.msg ? z_.msg : "inflate failed") + ". HINT: check the file with `gzip -t`");
        return false;
      }
      if (out->size() > old) return true;
    }
  }

 private:
  uint64_t consumed() const { return raw_offset_ - z_.avail_in; }
  // Bytes read (appended to *out), 0 at the end, -1 on an error.
  ssize_t ReadRaw(std::string* out, Status* status) {
    const size_t old = out->size();
    out->resize(old + kChunk);
    ssize_t n;
    do {
      n = sysio::Read(fd_, out->data() + old, kChunk, path_.c_str());
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      out->resize(old);
      *status = Status::IOError(path_ + ": read at byte " + std::to_string(raw_offset_) + ": " +
                                std::strerror(errno));
      return -1;
    }
    out->resize(old + n);
    raw_offset_ += n;
    if (n == 0) raw_eof_ = true;
    return n;
  }

  std::string path_;
  int fd_;
  bool gzip_;
  z_stream z_;
  std::string raw_;
  uint64_t raw_offset_ = 0;
  bool raw_eof_ = false;
  bool stream_end_ = false;
};

class TextLinesImpl : public TextLines {
 public:
  explicit TextLinesImpl(std::unique_ptr<ByteSource> in) : in_(std::move(in)) {}
  bool Next(std::string* line, Status* status) override {
    while (true) {
      const size_t nl = buf_.find('\n', pos_);
      if (nl != std::string::npos) {
        line->assign(buf_, pos_, nl - pos_);
        pos_ = nl + 1;
        break;
      }
      if (eof_) {
        if (pos_ >= buf_.size()) return false;
        line->assign(buf_, pos_, std::string::npos);  // a last line without "\n"
        pos_ = buf_.size();
        break;
      }
      buf_.erase(0, pos_);
      pos_ = 0;
      if (!in_->Read(&buf_, status)) {
        if (!status->ok()) return false;
        eof_ = true;
      }
    }
    if (!line->empty() && line->back() == '\r') line->pop_back();
    return true;
  }

 private:
  std::unique_ptr<ByteSource> in_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
};

}  // namespace

Status TextLines::Open(const std::string& path, std::unique_ptr<TextLines>* out) {
  int fd = -1;
  SLUICE_RETURN_IF_ERROR(sysio::OpenRegular(path, O_RDONLY | O_CLOEXEC, &fd));
  *out = std::make_unique<TextLinesImpl>(
      std::make_unique<ByteSource>(path, fd, EndsWith(path, ".gz")));
  return Status::OK();
}

Status GunzipString(const std::string& name, const std::string& gz, std::string* out) {
  out->clear();
  z_stream z;
  std::memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return Status::Corruption(name + ": inflateInit2");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  Status st;
  bool ended = false;
  while (true) {
    if (ended) {
      if (z.avail_in == 0) break;
      inflateReset(&z);
      ended = false;
    }
    const size_t old = out->size();
    out->resize(old + kChunk);
    z.next_out = reinterpret_cast<Bytef*>(out->data() + old);
    z.avail_out = kChunk;
    const int rc = inflate(&z, Z_NO_FLUSH);
    out->resize(old + kChunk - z.avail_out);
    if (rc == Z_STREAM_END) {
      ended = true;
    } else if (rc != Z_OK || (z.avail_in == 0 && z.avail_out != 0)) {
      st = Status::Corruption(name + ": " +
                              (rc == Z_OK || rc == Z_BUF_ERROR
                                   ? std::string("gzip data cut off")
                                   : std::string(z.msg ? z.msg : "damaged gzip")) +
                              " at compressed byte " + std::to_string(gz.size() - z.avail_in));
      break;
    }
  }
  inflateEnd(&z);
  return st;
}

}  // namespace sluice::importers
