#include "importers/hf_parquet.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

extern char** environ;

namespace sluice::importers {
namespace {

// A header line is a key, a transcript and a path: far below this unless the stream is broken.
constexpr size_t kMaxHeader = size_t{16} << 20;
// As for a tar member (webdataset.cc): one clip's encoded file.
constexpr uint64_t kMaxAudioBytes = uint64_t{1} << 31;

// The string member `name` of `j`: *out and true when it is a string, false when it is absent or
// null; *bad when it is something else.
bool StringMember(const nlohmann::json& j, const char* name, std::string* out, bool* bad) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return false;
  if (!it->is_string()) {
    *bad = true;
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

// The rows of the files, one reader process at a time.
class HfImporter final : public Importer {
 public:
  HfImporter(std::vector<std::string> files, ImportOptions opt)
      : files_(std::move(files)), opt_(std::move(opt)) {}
  ~HfImporter() override { Stop(true); }

  bool Next(ImportItem* item, Status* status) override {
    while (true) {
      if (pid_ < 0) {
        if (next_ >= files_.size()) return false;
        *status = Start(files_[next_++]);
        if (!status->ok()) return false;
      }
      std::string header;
      *status = ReadLine(&header);
      if (!status->ok()) return false;
      nlohmann::json j = nlohmann::json::parse(header, nullptr, false);
      if (!j.is_object()) {
        *status = Broken("a header line that is not a JSON object");
        return false;
      }
      if (auto e = j.find("error"); e != j.end()) {
        Stop(true);
        *status = Status::InvalidArgument(file_ + ": " +
                                          (e->is_string() ? e->get<std::string>() : e->dump()));
        return false;
      }
      if (auto end = j.find("end"); end != j.end()) {
        if (!end->is_number_unsigned() || end->get<uint64_t>() != rows_) {
          *status =
              Broken("an end marker for " + end->dump() + " rows after " + std::to_string(rows_));
          return false;
        }
        *status = Finish();
        if (!status->ok()) return false;
        continue;
      }
      auto bytes = j.find("bytes");
      auto row = j.find("row");
      if (bytes == j.end() || !bytes->is_number_unsigned() || row == j.end() ||
          !row->is_number_unsigned() || row->get<uint64_t>() != rows_ + 1) {
        *status = Broken("a header out of step (row " + std::to_string(rows_ + 1) + " expected)");
        return false;
      }
      const uint64_t n = bytes->get<uint64_t>();
      if (n > kMaxAudioBytes) {
        *status = Broken("row " + std::to_string(rows_ + 1) + " declares " + std::to_string(n) +
                         " audio bytes, over 2 GiB");
        return false;
      }
      std::string audio;
      *status = ReadBytes(static_cast<size_t>(n), &audio);
      if (!status->ok()) return false;
      ++rows_;
      ParseHfRow(file_, header, std::move(audio), opt_, item);
      return true;
    }
  }

 private:
  Status Start(const std::string& file) {
    file_ = file;
    rows_ = 0;
    buf_.clear();
    pos_ = 0;
    int fd[2];
    if (::pipe2(fd, O_CLOEXEC) != 0)
      return Status::IOError(file + ": pipe: " + std::strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    const std::string meta = nlohmann::json{
        {"speaker", opt_.hf_speaker},
        {"language", opt_.hf_language},
        {"fields", opt_.fields}}.dump();
    const char* argv[] = {opt_.python.c_str(),
                          "-c",
                          kHfReaderScript,
                          opt_.hf_audio.c_str(),
                          opt_.hf_text.c_str(),
                          opt_.hf_id.c_str(),
                          file.c_str(),
                          meta.c_str(),
                          nullptr};
    // stderr stays shardify's: a Python traceback reaches the user as it is.
    const int rc =
        posix_spawnp(&pid_, opt_.python.c_str(), &fa, nullptr, const_cast<char**>(argv), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fd[1]);
    if (rc != 0) {
      ::close(fd[0]);
      pid_ = -1;
      return Status::InvalidArgument(file + ": cannot start the parquet reader '" + opt_.python +
                                     "': " + std::strerror(rc) +
                                     ". HINT: pass --python a Python 3 that has pyarrow");
    }
    fd_ = fd[0];
    return Status::OK();
  }

  // Waits for the reader of file_; an error unless it exited 0.
  Status Finish() {
    const int wstatus = Stop(false);
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return Status::OK();
    return Status::InvalidArgument(file_ + ": the parquet reader (" + opt_.python + ") " +
                                   Exit(wstatus) + " (its stderr is above)");
  }

  // Closes the pipe and reaps the reader, killing it first when `kill`; its wait status.
  int Stop(bool kill) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    int wstatus = 0;
    if (pid_ > 0) {
      if (kill) ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
      }
    }
    pid_ = -1;
    return wstatus;
  }

  static std::string Exit(int wstatus) {
    if (WIFSIGNALED(wstatus)) return std::string("died of signal ") + strsignal(WTERMSIG(wstatus));
    return "exited with status " + std::to_string(WEXITSTATUS(wstatus));
  }

  // The stream broke: the reader is stopped and the error names the file and the row.
  Status Broken(const std::string& what) {
    Stop(true);
    return Status::Corruption(file_ + ": the parquet reader's stream broke after row " +
                              std::to_string(rows_) + ": " + what);
  }

  // More bytes into buf_; false at the end of the stream.
  bool Fill(Status* status) {
    if (pos_ > 0 && pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    }
    char chunk[1 << 16];
    while (true) {
      const ssize_t got = ::read(fd_, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        *status = Status::IOError(file_ +
                                  ": reading the parquet reader's output: " + std::strerror(errno));
        return false;
      }
      if (got == 0) return false;
      buf_.append(chunk, static_cast<size_t>(got));
      return true;
    }
  }

  // The stream ended early: the reader's exit says why (a traceback on stderr, a kill).
  Status EndedEarly() {
    const int wstatus = Stop(false);
    return Status::InvalidArgument(file_ + ": the parquet reader (" + opt_.python + ") " +
                                   Exit(wstatus) + " after row " + std::to_string(rows_) +
                                   " without finishing the file (its stderr is above)");
  }

  Status ReadLine(std::string* line) {
    while (true) {
      const size_t nl = buf_.find('\n', pos_);
      if (nl != std::string::npos) {
        line->assign(buf_, pos_, nl - pos_);
        pos_ = nl + 1;
        return Status::OK();
      }
      if (buf_.size() - pos_ > kMaxHeader) return Broken("a header line over 16 MiB");
      Status st;
      if (!Fill(&st)) return st.ok() ? EndedEarly() : st;
    }
  }

  Status ReadBytes(size_t n, std::string* out) {
    out->clear();
    out->reserve(n);
    while (out->size() < n) {
      if (pos_ == buf_.size()) {
        Status st;
        if (!Fill(&st)) return st.ok() ? EndedEarly() : st;
      }
      const size_t take = std::min(n - out->size(), buf_.size() - pos_);
      out->append(buf_, pos_, take);
      pos_ += take;
    }
    return Status::OK();
  }

  std::vector<std::string> files_;
  ImportOptions opt_;
  size_t next_ = 0;
  std::string file_;
  pid_t pid_ = -1;
  int fd_ = -1;
  uint64_t rows_ = 0;
  std::string buf_;
  size_t pos_ = 0;
};

}  // namespace

void ParseHfRow(const std::string& file, const std::string& header, std::string audio,
                const ImportOptions& opt, ImportItem* out) {
  *out = ImportItem();
  out->source = file;
  out->input = header;
  nlohmann::json j = nlohmann::json::parse(header, nullptr, false);
  uint64_t row = 0;
  if (j.is_object()) {
    if (auto it = j.find("row"); it != j.end() && it->is_number_unsigned())
      row = it->get<uint64_t>();
  }
  out->line = row;
  const std::string where = file + " row " + std::to_string(row);
  auto reject = [&](const std::string& why) {
    *out = ImportItem{out->source, out->line, out->input, where + ": " + why};
  };
  if (!j.is_object()) return reject("the row's header is not a JSON object");
  bool bad = false;
  std::string path;
  const bool has_path = StringMember(j, "path", &path, &bad);
  if (bad) return reject("the audio's path is not a string");
  std::string key;
  if (j.contains("key")) {
    if (!StringMember(j, "key", &key, &bad))
      return reject(bad ? "the id is not a string" : "the id is null");
  } else if (has_path && !path.empty()) {
    key = path;
  } else {
    return reject(
        "no id column and no audio path to key the record by. HINT: name the id column "
        "with --hf-id (from_hf: id=)");
  }
  out->key = key;
  if (!StringMember(j, "text", &out->text, &bad))
    return reject(std::string("\"") + key +
                  "\": " + (bad ? "the text column holds no string" : "the transcript is null"));
  for (auto [name, dst] : {std::pair{"speaker", &out->speaker}, {"language", &out->language}}) {
    auto v = j.find(name);
    if (v == j.end() || v->is_null()) continue;
    if (v->is_string()) *dst = v->get<std::string>();
    else if (v->is_number_integer()) *dst = v->dump();
    else return reject("\"" + key + "\": the " + name + " column holds no string");
  }
  if (auto f = j.find("fields"); f != j.end() && f->is_object()) out->fields = f->dump();
  if (!audio.empty()) {
    out->audio_bytes = std::move(audio);
    out->audio_name = where + (has_path ? " (" + path + ")" : std::string());
  } else if (has_path && !path.empty()) {
    // datasets keeps a path alone for audio it did not embed: the file is read from disk.
    out->audio_path = path;
    out->base_dir = opt.base_dir;
  } else {
    return reject("\"" + key + "\": no audio (the audio column's bytes and path are both null)");
  }
}

Status OpenHfParquet(std::vector<std::string> files, const ImportOptions& opt,
                     std::unique_ptr<Importer>* out) {
  *out = std::make_unique<HfImporter>(std::move(files), opt);
  return Status::OK();
}

}  // namespace sluice::importers
