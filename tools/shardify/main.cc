// shardify: turns a corpus into a sluice dataset (docs/shardify.md).
#include <cstdio>
#include <cstdlib>
#include <new>

#include "commands.h"
#include "options_cli.h"
#include "part.h"

namespace sluice::shardify {

void AddWriteOptions(CLI::App* sub, WriteArgs* a) {
  sub->add_option("-o,--out", a->out, "Output dataset directory")->required();
  sub->add_option("--shard-size", a->shard_size,
                  "Target size of one shard file (e.g. 256MiB, 1GiB)")
      ->capture_default_str();
  sub->add_option("--block-size", a->block_size,
                  "Raw bytes per zstd block, the unit of random access and checksums")
      ->capture_default_str();
  sub->add_option("--zstd-level", a->zstd_level,
                  "zstd level, -7 (fastest to read) to 19 (smallest); 0 = -1 for audio, 3 for text")
      ->check(CLI::Range(-7, 19))
      ->capture_default_str();
  // Bounded: a billion threads made oneTBB's arena crash the run (SIGSEGV).
  sub->add_option("-j,--threads", a->threads,
                  "Worker threads (0: the cores this process may use: its CPU affinity and "
                  "cgroup quota); output is identical for any value")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  sub->add_option(
      "--part", a->part,
      "Process part i of N (i/N, 0-based) of the input, for a batch scheduler's array job; "
      "auto: from SLURM_ARRAY_TASK_ID/_COUNT/_MIN; auto/N: part SLURM_ARRAY_TASK_ID of N. A "
      "finished part writes part.json; rerun, a complete part is a no-op and an incomplete one "
      "is redone. Combine the parts with 'shardify merge'");
  sub->add_flag("--resume", a->resume,
                "Continue an interrupted run in --out from its last complete shard");
  sub->add_flag("--overwrite", a->overwrite,
                "Replace a dataset or an interrupted run already in --out");
  sub->add_flag("--json", a->json, "Print the summary as one JSON object");
  sub->add_flag("-q,--quiet", a->quiet, "No progress line, even on a terminal");
}

void AddTokenizerOptions(CLI::App* sub, TokenizerArgs* a) {
  sub->add_option(
      "--tokenizer", a->spec,
      "Store token ids: char (character vocabulary), bpe:N or unigram:N (SentencePiece trained on "
      "the texts), spm:PATH (a trained .model), hf:PATH/tokenizer.json or "
      "tiktoken:PATH[:ENCODING] (an LLM's byte-level BPE, ids as the file gives them)");
  sub->add_flag("--keep-case", a->keep_case, "Tokenize without lowercasing");
  sub->add_flag("--keep-punctuation", a->keep_punctuation,
                "Tokenize without stripping punctuation");
  sub->add_flag("--allow-unknown", a->allow_unknown,
                "With spm:PATH, keep texts that map to <unk> instead of rejecting them");
  sub->add_option("--tokenizer-seed", a->seed, "Seed of SentencePiece training")
      ->capture_default_str();
  sub->add_option("--add-special-tokens", a->add_special_tokens,
                  "With hf:PATH, put the file's post-processor tokens (e.g. Llama 3's "
                  "<|begin_of_text|>) around each text, as HF's encode(add_special_tokens=True)")
      ->capture_default_str();
  sub->add_option("--eod-token", a->end_of_document_token,
                  "With hf:PATH, the token that ends each document (default: the file's "
                  "post-processor's last token, else its one special end-of-text token)");
}

void AddWriteFingerprint(const IngestOptions& opt, nlohmann::json* f) {
  (*f)["shard_size"] = opt.writer.shard_size;
  (*f)["block_size"] = opt.writer.shard.block_size;
  (*f)["zstd_level"] = opt.writer.shard.zstd_level;
  (*f)["part"] = opt.is_part ? PartSpec(opt.part, opt.parts) : "";
}

nlohmann::json TokenizerFingerprint(const TokenizerArgs& a) {
  return {{"spec", a.spec},
          {"keep_case", a.keep_case},
          {"keep_punctuation", a.keep_punctuation},
          {"allow_unknown", a.allow_unknown},
          {"add_special_tokens", a.add_special_tokens},
          {"end_of_document_token", a.end_of_document_token},
          {"seed", a.seed}};
}

namespace {

Status ParseSize(const std::string& text, const char* what, uint64_t* out) {
  // CLI11's AsSizeValue understands "256MiB", "1GB", "4096"; binary units as written.
  try {
    std::string s = text;
    CLI::AsSizeValue conv(false);
    const std::string err = conv(s);
    if (!err.empty()) throw CLI::ValidationError(err);
    *out = std::stoull(s);
  } catch (const std::exception&) {
    return Status::InvalidArgument(std::string(what) + " '" + text +
                                   "': expected a size such as 4096, 1MiB or 2GiB");
  }
  if (*out == 0) return Status::InvalidArgument(std::string(what) + " must be positive");
  return Status::OK();
}

}  // namespace

Status MakeIngestOptions(const WriteArgs& a, int default_zstd_level, IngestOptions* o) {
  o->out_dir = a.out;
  SLUICE_RETURN_IF_ERROR(ParseSize(a.shard_size, "--shard-size", &o->writer.shard_size));
  uint64_t block = 0;
  SLUICE_RETURN_IF_ERROR(ParseSize(a.block_size, "--block-size", &block));
  if (block > shards::kMaxBlockRawSize)
    return Status::InvalidArgument("--block-size must be at most 1GiB");
  o->writer.shard.block_size = block;
  o->writer.shard.zstd_level = a.zstd_level != 0 ? a.zstd_level : default_zstd_level;
  o->threads = a.threads;
  if (!a.part.empty()) {
    SLUICE_RETURN_IF_ERROR(ResolvePart(a.part, std::getenv, &o->part, &o->parts));
    o->is_part = true;
  }
  o->resume = a.resume;
  o->overwrite = a.overwrite;
  o->progress = !a.quiet;
  if (a.resume && a.overwrite)
    return Status::InvalidArgument("--resume and --overwrite exclude each other");
  return Status::OK();
}

int ReportError(const Status& s) {
  std::fprintf(stderr, "shardify: error: %s\n", s.ToString().c_str());
  return s.IsCorruption() ? 1 : 2;
}

}  // namespace sluice::shardify

int main(int argc, char** argv) {
  using namespace sluice::shardify;
  CLI::App app{
      "shardify: turn an audio or text corpus into a sluice dataset of zstd-compressed, "
      "checksummed,\n"
      "indexed shards plus manifest.json. See docs/shardify.md.",
      "shardify"};
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(1);
  int exit_code = 0;
  RegisterAudio(&app, &exit_code);
  RegisterText(&app, &exit_code);
  RegisterConversations(&app, &exit_code);
  RegisterInfo(&app, &exit_code);
  RegisterVerify(&app, &exit_code);
  RegisterMerge(&app, &exit_code);
  RegisterExport(&app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return sluice::tools::CommandLineExit(app, e);
  } catch (const std::bad_alloc&) {
    // Out of memory (an address-space limit, ulimit -v, or a cgroup's): say which options bound
    // what is held at once. The output directory is left resumable.
    std::fprintf(stderr,
                 "shardify: error: out of memory. HINT: lower --threads (each worker holds up to "
                 "4 decoded clips in flight), --max-duration (the longest clip held whole) or "
                 "--block-size (a block is held while it compresses), then rerun with --resume\n");
    return 2;
  } catch (const std::exception& e) {
    // Data errors are Status values; an exception here is a bug.
    std::fprintf(stderr, "shardify: internal error: %s\n", e.what());
    return 2;
  }
  return exit_code;
}
