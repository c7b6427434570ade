// Tars written in memory with libarchive's writer, for the importers' tests: members of any type
// (a link, a directory), which webdataset's own TarWriter never writes.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <string>
#include <vector>

namespace sluice::testing {

struct TarEntry {
  std::string name, data;
  int type = AE_IFREG;  // AE_IFLNK: a link to "target"; other types carry no data
};

// The tar of `entries` in order; `capacity` bounds its size (libarchive writes into a fixed
// buffer).
inline std::string WriteTar(const std::vector<TarEntry>& entries, size_t capacity = 4 << 20) {
  struct archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  std::string out(capacity, '\0');
  size_t used = 0;
  archive_write_open_memory(a, out.data(), out.size(), &used);
  for (const TarEntry& e : entries) {
    struct archive_entry* ae = archive_entry_new();
    archive_entry_set_pathname(ae, e.name.c_str());
    archive_entry_set_filetype(ae, e.type);
    archive_entry_set_perm(ae, 0644);
    if (e.type == AE_IFLNK) archive_entry_set_symlink(ae, "target");
    archive_entry_set_size(ae, e.type == AE_IFREG ? e.data.size() : 0);
    archive_write_header(a, ae);
    if (e.type == AE_IFREG) archive_write_data(a, e.data.data(), e.data.size());
    archive_entry_free(ae);
  }
  archive_write_close(a);
  archive_write_free(a);
  out.resize(used);
  return out;
}

}  // namespace sluice::testing
