// Runs a shell command whose stdout is an audio file (Kaldi `cmd |` wav.scp entries, Lhotse
// command sources), with a time limit: what `shardify audio --allow-pipes` does per item.
#pragma once

#include <string>

#include "base/status.h"

namespace sluice::importers {

// `/bin/sh -c command` in its own process group, stdin from /dev/null; *out gets its stdout.
// InvalidArgument, naming `name` and giving the command's stderr (its last 1000 bytes), when it
// exits non-zero, dies by a signal, writes nothing or more than 2 GiB, or runs past
// `timeout_seconds` (then its whole group is killed).
Status RunPipe(const std::string& name, const std::string& command, double timeout_seconds,
               std::string* out);

}  // namespace sluice::importers
