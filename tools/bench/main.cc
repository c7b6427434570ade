// sluice-bench: throughput benchmarks. Measurements live here, never in tests.
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"

namespace {

void Usage(FILE* out) {
  std::fprintf(
      out,
      "usage: sluice-bench <command> [options]\n"
      "\n"
      "commands:\n"
      "  features   feature extraction (fbank / spectrogram) clips/s and real-time factor\n"
      "  augment    waveform augmentation: ms of one core per hour of audio, per transform\n"
      "  epoch      whole loader epochs over a dataset: hours of audio/s, wait, RSS\n"
      "  feed       host-to-device feed: data wait, H2D GB/s pinned vs pageable, hidden-copy "
      "ratio\n"
      "  step       one training step of the CTC model on the device: ms/step and MFU, the sluice\n"
      "             side of tools/bench/asr_torch_step.py\n"
      "  pack       padding waste and cut documents of concat, first_fit and best_fit packing\n"
      "             on the same lognormal document lengths\n"
      "  conversations  speech-LLM conversations: synthetic datasets, planning time and memory\n"
      "             from the index, padding of packed vs 2-D vs 1-D buckets, loader throughput\n"
      "  tokenize   byte-level BPE (hf:/tiktoken:) encoding MB/s per core, the sluice side of\n"
      "             tools/bench/tokenize_vs_hf.py\n"
      "\n"
      "Run 'sluice-bench <command> --help' for the options of one command.\n"
      "docs/benchmarks.md explains the method.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    Usage(stdout);
    return 0;
  }
  // Hand the subcommand its own argv, with argv[0] naming it for --help output.
  std::string name = "sluice-bench " + cmd;
  argv[1] = name.data();
  if (cmd == "features") return sluice::bench::RunFeatures(argc - 1, argv + 1);
  if (cmd == "augment") return sluice::bench::RunAugment(argc - 1, argv + 1);
  if (cmd == "epoch") return sluice::bench::RunEpoch(argc - 1, argv + 1);
  if (cmd == "feed") return sluice::bench::RunFeed(argc - 1, argv + 1);
  if (cmd == "step") return sluice::bench::RunStep(argc - 1, argv + 1);
  if (cmd == "pack") return sluice::bench::RunPack(argc - 1, argv + 1);
  if (cmd == "conversations") return sluice::bench::RunConversations(argc - 1, argv + 1);
  if (cmd == "tokenize") return sluice::bench::RunTokenize(argc - 1, argv + 1);
  std::fprintf(stderr, "sluice-bench: unknown command '%s'\n", cmd.c_str());
  Usage(stderr);
  return 2;
}
