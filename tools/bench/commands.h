// Subcommands of sluice-bench; each lives in its own bench_<name>.cc.
// Every one takes the arguments after its name and returns a process exit code.
#pragma once

namespace sluice::bench {

int RunFeatures(int argc, char** argv);  // bench_features.cc: feature extraction per core
int RunAugment(int argc, char** argv);   // bench_augment.cc: waveform augmentation per core
int RunEpoch(int argc, char** argv);     // bench_epoch.cc: whole loader epochs
int RunFeed(int argc, char** argv);      // bench_feed.cc: host-to-device feed, synthetic consumer
int RunStep(int argc, char** argv);      // bench_step.cc: one training step of the CTC model
int RunPack(int argc, char** argv);      // bench_pack.cc: padding of the packing modes
int RunConversations(int argc, char** argv);  // bench_conversations.cc: speech-LLM figures
int RunTokenize(int argc, char** argv);  // bench_tokenize.cc: byte-level BPE encoding per core

}  // namespace sluice::bench
