// Lhotse Shar directories (docs/shardify-inputs.md, "Lhotse Shar"): cuts.NNNNNN.jsonl.gz beside
// recording.NNNNNN.tar, as CutSet.to_shar writes them. Each cut's audio is the tar member
// "<cut id>.<ext>" (the cut's own span, already cut by lhotse), followed by "<cut id>.json"; a
// cut without audio has "<cut id>.nodata" instead.
//
// A cut becomes one record like a cut of a cuts manifest (lhotse.h: key, text, the same checks),
// its audio the member's bytes, decoded whole. Rejected, naming the cut: a cut stored without
// audio, and every reason lhotse.h gives. A tar out of step with its cuts (another cut's member)
// is an error: the directory is damaged.
#pragma once

#include <memory>
#include <string>

#include "importers/item.h"
#include "importers/options.h"

namespace sluice::importers {

// NotFound when DIR holds no cuts.*.jsonl(.gz); InvalidArgument when a cuts shard has no
// recording tar of the same number.
Status OpenShar(const std::string& dir, const ImportOptions& opt, std::unique_ptr<Importer>* out);

}  // namespace sluice::importers
