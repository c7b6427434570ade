// sluice-bench pack: the padding the three packing modes leave on the same documents.
//
// Document lengths are drawn from a lognormal (web text and code are close to one: a median of a
// few hundred tokens and a long tail), in stream order, and placed by the loader's own planner
// (loader/pack_fit.h FitDocuments) for first_fit and best_fit; concat cuts their stream into
// rows. Each mode is reported with the rows it needs, its padding (input columns holding no
// token), and the documents it cuts: concat cuts every document that crosses a row boundary
// (the model sees its two parts as unrelated rows), the fits only those longer than a row.
// Nothing is read from disk: the plan is a function of the lengths alone, as in the loader.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "loader/options.h"
#include "loader/pack_fit.h"

namespace sluice::bench {
namespace {

struct ModeFigures {
  std::string mode;
  uint64_t rows = 0;
  uint64_t padding = 0;  // input columns with no token
  uint64_t cut = 0;      // documents whose tokens lie in more than one row
  double seconds = 0;    // planning time
};

ModeFigures Concat(const std::vector<uint32_t>& lengths, uint32_t L) {
  const auto t0 = std::chrono::steady_clock::now();
  ModeFigures m{"concat"};
  uint64_t at = 0;
  for (uint32_t n : lengths) {
    // Crosses a boundary when its first and last token lie in different rows.
    m.cut += at / L != (at + n - 1) / L;
    at += n;
  }
  m.rows = (at + L - 1) / L;
  m.padding = m.rows * L - at;  // the last row's tail (the loader wraps it to the stream's start)
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

ModeFigures Fit(const std::vector<uint32_t>& lengths, loader::PackingOptions p,
                loader::PackMode mode, const char* name) {
  p.pack_mode = mode;
  const auto t0 = std::chrono::steady_clock::now();
  loader::FitRows fit;
  loader::FitDocuments(lengths, p, &fit);
  ModeFigures m{name};
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.rows = fit.row_first.size() - 1;
  m.padding = fit.padding;
  m.cut = fit.split_documents + fit.truncated_documents;
  return m;
}

}  // namespace

int RunPack(int argc, char** argv) {
  CLI::App app{"Padding waste of concat, first_fit and best_fit packing on the same documents"};
  uint64_t documents = 200000;
  double median = 400, sigma = 1.2;
  uint32_t seq_len = 4096, fit_window = 1024;
  uint64_t seed = 1;
  bool split_long = true, json = false;
  app.add_option("--documents", documents, "documents drawn")->check(CLI::Range(1, 1 << 30));
  app.add_option("--median", median, "lognormal median length, tokens")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--sigma", sigma, "lognormal sigma of ln(length)")->check(CLI::Range(0.0, 5.0));
  app.add_option("--seq-len", seq_len, "tokens per row L")->check(CLI::Range(1, 1 << 24));
  app.add_option("--fit-window", fit_window, "documents placed together by the fits")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--seed", seed, "seed of the lengths");
  app.add_option("--split-long", split_long,
                 "the fits split documents longer than L (false: truncate them, counted as cut)");
  app.add_flag("--json", json, "one JSON object instead of the table");
  CLI11_PARSE(app, argc, argv);

  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> dist(std::log(median), sigma);
  std::vector<uint32_t> lengths(documents);
  uint64_t tokens = 0;
  for (uint32_t& n : lengths) {
    n = static_cast<uint32_t>(std::clamp(std::llround(dist(rng)), 1LL, 1LL << 30));
    tokens += n;
  }
  loader::PackingOptions p;
  p.seq_len = seq_len;
  p.fit_window = fit_window;
  p.split_long = split_long;
  const ModeFigures modes[] = {Concat(lengths, seq_len),
                               Fit(lengths, p, loader::PackMode::kFirstFit, "first_fit"),
                               Fit(lengths, p, loader::PackMode::kBestFit, "best_fit")};
  if (json) {
    nlohmann::json j = {
        {"documents", documents},   {"tokens", tokens},   {"median", median},
        {"sigma", sigma},           {"seq_len", seq_len}, {"fit_window", fit_window},
        {"split_long", split_long}, {"seed", seed},       {"modes", nlohmann::json::array()}};
    for (const ModeFigures& m : modes)
      j["modes"].push_back({{"mode", m.mode},
                            {"rows", m.rows},
                            {"padding_tokens", m.padding},
                            {"padding_waste", static_cast<double>(m.padding) / (m.rows * seq_len)},
                            {"cut_documents", m.cut},
                            {"plan_seconds", m.seconds}});
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf(
      "%llu documents, %llu tokens (lognormal median %.0f, sigma %.2f), L %u, fit window %u, "
      "split_long %s\n",
      static_cast<unsigned long long>(documents), static_cast<unsigned long long>(tokens), median,
      sigma, seq_len, fit_window, split_long ? "true" : "false");
  std::printf("%-10s %10s %14s %9s %14s %10s\n", "mode", "rows", "padding", "waste", "cut docs",
              "plan s");
  for (const ModeFigures& m : modes)
    std::printf("%-10s %10llu %14llu %8.3f%% %14llu %10.3f\n", m.mode.c_str(),
                static_cast<unsigned long long>(m.rows), static_cast<unsigned long long>(m.padding),
                100.0 * static_cast<double>(m.padding) / (static_cast<double>(m.rows) * seq_len),
                static_cast<unsigned long long>(m.cut), m.seconds);
  return 0;
}

}  // namespace sluice::bench
