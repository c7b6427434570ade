// sluice-bench tokenize: byte-level BPE encoding throughput (docs/tokenizers.md, "Speed"), the
// sluice side of tools/bench/tokenize_vs_hf.py, which runs HF tokenizers and tiktoken on the same
// text.
//
// The text is read and cut into documents before the clock starts; each pass encodes every
// document once. The merge cache is shared by all threads and kept across passes, as in a loader;
// the first pass (cold cache) is reported apart from the fastest later one. Per core means per
// CPU-second of the process (getrusage), which stays meaningful on a machine shared with other
// work, where wall time does not.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "command_line.h"
#include "commands.h"
#include "features/bpe_file_spec.h"

namespace sluice::bench {
namespace {

struct TokenizeArgs {
  std::string tokenizer;
  std::string input;
  size_t doc_bytes = 0;  // 0: one document per line
  int threads = 1;
  int passes = 3;
  bool json = false;
};

bool ParseTokenizeArgs(int argc, char** argv, TokenizeArgs* a, int* exit_code) {
  CLI::App app{"Byte-level BPE encoding: MB/s and tokens/s, per core, text already in memory.",
               argv[0]};
  app.add_option("--tokenizer", a->tokenizer, "hf:PATH/tokenizer.json or tiktoken:PATH[:ENCODING]")
      ->required();
  app.add_option("--input", a->input, "UTF-8 text file")->required();
  app.add_option("--doc-bytes", a->doc_bytes,
                 "cut the text into documents of about this many bytes (at a line end); "
                 "0: one document per line")
      ->capture_default_str();
  app.add_option("--threads", a->threads, "encoding threads")->check(CLI::Range(1, 1024));
  app.add_option("--passes", a->passes, "timed passes after the first; the fastest is reported")
      ->check(CLI::Range(1, 1000));
  app.add_flag("--json", a->json, "print one JSON object");
  return ParseCommandLine(app, argc, argv, exit_code);
}

std::vector<std::string> CutDocuments(const std::string& text, size_t doc_bytes) {
  std::vector<std::string> docs;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', doc_bytes == 0 ? start : std::min(text.size(), start + doc_bytes));
    end = end == std::string::npos ? text.size() : end + 1;
    docs.push_back(text.substr(start, end - start));
    start = end;
  }
  return docs;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Seconds (wall and CPU) for one pass over `docs` with `threads` workers taking documents from a
// counter; the tokens made, in *tokens. A failed Encode ends the bench with its status.
Status TimePass(const features::Tokenizer& tok, const std::vector<std::string>& docs, int threads,
                double* seconds, double* cpu_seconds, uint64_t* tokens) {
  const double cpu0 = CpuSeconds();
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> total{0};
  std::vector<Status> errors(threads);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<int32_t> ids;
      uint64_t n = 0;
      for (size_t i = next++; i < docs.size(); i = next++) {
        ids.clear();
        Status s = tok.Encode(docs[i], &ids);
        if (!s.ok()) {
          errors[t] = Prefixed(s, "document " + std::to_string(i));
          return;
        }
        n += ids.size();
      }
      total += n;
    });
  }
  for (auto& th : pool) th.join();
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *cpu_seconds = CpuSeconds() - cpu0;
  *tokens = total;
  for (const Status& s : errors) SLUICE_RETURN_IF_ERROR(s);
  return Status::OK();
}

}  // namespace

int RunTokenize(int argc, char** argv) {
  TokenizeArgs a;
  int exit_code = 0;
  if (!ParseTokenizeArgs(argc, argv, &a, &exit_code)) return exit_code;
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "sluice-bench tokenize: %s\n", s.ToString().c_str());
    return 1;
  };
  features::BpeFileSpec spec;
  std::string file_bytes, text;
  std::unique_ptr<features::Tokenizer> tok;
  Status s = features::ParseBpeFileSpec(a.tokenizer, &spec);
  if (s.ok()) s = features::LoadBpeFile(spec, &file_bytes, &tok);
  if (s.ok()) s = ReadFileToString(a.input, &text);
  if (!s.ok()) return fail(s);
  const std::vector<std::string> docs = CutDocuments(text, a.doc_bytes);
  double cold = 0, best = 1e300, cold_cpu = 0, best_cpu = 1e300;
  uint64_t tokens = 0;
  for (int pass = 0; pass <= a.passes; ++pass) {
    double seconds = 0, cpu = 0;
    s = TimePass(*tok, docs, a.threads, &seconds, &cpu, &tokens);
    if (!s.ok()) return fail(s);
    if (pass == 0) {
      cold = seconds;
      cold_cpu = cpu;
    } else {
      best = std::min(best, seconds);
      best_cpu = std::min(best_cpu, cpu);
    }
  }
  const double mb = static_cast<double>(text.size()) / 1e6;
  nlohmann::json j = {{"tokenizer", a.tokenizer},
                      {"input", a.input},
                      {"bytes", text.size()},
                      {"documents", docs.size()},
                      {"tokens", tokens},
                      {"threads", a.threads},
                      {"cold_seconds", cold},
                      {"seconds", best},
                      {"mb_per_second", mb / best},
                      {"cpu_seconds", best_cpu},
                      {"mb_per_second_per_core", mb / best_cpu},
                      {"cold_mb_per_second_per_core", mb / cold_cpu},
                      {"tokens_per_second", static_cast<double>(tokens) / best}};
  if (a.json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf(
        "%s: %.1f MB, %zu documents, %llu tokens, %d thread(s)\n"
        "  %.1f MB/s (%.1f MB per CPU-second; first pass, cold cache: %.1f), %.2f M tokens/s\n",
        a.tokenizer.c_str(), mb, docs.size(), static_cast<unsigned long long>(tokens), a.threads,
        mb / best, mb / best_cpu, mb / cold_cpu, tokens / best / 1e6);
  }
  return 0;
}

}  // namespace sluice::bench
