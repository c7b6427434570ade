#include "importers/tar_reader.h"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/sysio.h"

namespace sluice::importers {

struct TarReader::State {
  std::string path;
  int fd = -1;
  std::string buf = std::string(1 << 16, '\0');
  std::string read_error;
  struct archive* a = nullptr;
  std::string last;
  bool eof = false;
  ~State() {
    if (a) archive_read_free(a);
    if (fd >= 0) ::close(fd);
  }
};

namespace {

constexpr la_int64_t kMaxMember = la_int64_t{1} << 31;

la_ssize_t Read(struct archive*, void* data, const void** out) {
  auto* s = static_cast<TarReader::State*>(data);
  ssize_t n;
  do {
    n = sysio::Read(s->fd, s->buf.data(), s->buf.size(), s->path.c_str());
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    s->read_error = s->path + ": read: " + std::strerror(errno);
    return -1;
  }
  *out = s->buf.data();
  return n;
}

}  // namespace

TarReader::TarReader(std::unique_ptr<State> s) : s_(std::move(s)) {}
TarReader::~TarReader() = default;

Status TarReader::Open(const std::string& path, std::unique_ptr<TarReader>* out) {
  auto s = std::make_unique<State>();
  s->path = path;
  SLUICE_RETURN_IF_ERROR(sysio::OpenRegular(path, O_RDONLY | O_CLOEXEC, &s->fd));
  s->a = archive_read_new();
  archive_read_support_format_tar(s->a);
  archive_read_support_filter_gzip(s->a);
  if (archive_read_open(s->a, s.get(), nullptr, Read, nullptr) != ARCHIVE_OK) {
    const char* msg = archive_error_string(s->a);
    return Status::Corruption(path + ": " + (msg ? msg : "not a tar") +
                              ". HINT: a WebDataset or Shar shard is a tar file");
  }
  out->reset(new TarReader(std::move(s)));
  return Status::OK();
}

Status TarReader::OpenMemory(const std::string& name, const std::string& bytes,
                             std::unique_ptr<TarReader>* out) {
  auto s = std::make_unique<State>();
  s->path = name;
  s->a = archive_read_new();
  archive_read_support_format_tar(s->a);
  archive_read_support_filter_gzip(s->a);
  if (archive_read_open_memory(s->a, bytes.data(), bytes.size()) != ARCHIVE_OK) {
    const char* msg = archive_error_string(s->a);
    return Status::Corruption(name + ": " + (msg ? msg : "not a tar"));
  }
  out->reset(new TarReader(std::move(s)));
  return Status::OK();
}

bool TarReader::Next(TarMember* m, Status* status) {
  State& s = *s_;
  auto fail = [&](const std::string& what) {
    if (!s.read_error.empty()) {
      *status = Status::IOError(s.read_error + " (" + what + ")");
    } else {
      const char* msg = archive_error_string(s.a);
      *status = Status::Corruption(s.path + ": " + what + ": " + (msg ? msg : "damaged tar") +
                                   ". HINT: check the tar with `tar tvf " + s.path + "`");
    }
    return false;
  };
  while (!s.eof) {
    struct archive_entry* e = nullptr;
    const int rc = archive_read_next_header(s.a, &e);
    if (rc == ARCHIVE_EOF) {
      s.eof = true;  // libarchive refuses a call after its end
      return false;
    }
    if (rc < ARCHIVE_WARN)
      return fail("reading a header after " +
                  (s.last.empty() ? "the start" : "\"" + s.last + "\""));
    const char* name = archive_entry_pathname(e);
    m->name = name ? name : "";
    m->data.clear();
    m->too_large = false;
    s.last = m->name;
    if (archive_entry_filetype(e) == AE_IFDIR) continue;
    m->regular = archive_entry_filetype(e) == AE_IFREG;
    if (!m->regular) return true;
    const la_int64_t size = archive_entry_size(e);
    m->too_large = size < 0 || size > kMaxMember;
    if (m->too_large) return true;  // libarchive skips its data at the next header
    m->data.resize(static_cast<size_t>(size));
    size_t got = 0;
    while (got < m->data.size()) {
      const la_ssize_t n = archive_read_data(s.a, m->data.data() + got, m->data.size() - got);
      if (n < 0) return fail("reading member \"" + m->name + "\"");
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != m->data.size())
      return fail("member \"" + m->name + "\" cut off: " + std::to_string(got) + " of " +
                  std::to_string(size) + " bytes");
    return true;
  }
  return false;
}

}  // namespace sluice::importers
