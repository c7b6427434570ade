// What the importers may do beyond reading their own files.
#pragma once

#include <string>
#include <vector>

namespace sluice::importers {

struct ImportOptions {
  // Run shell commands that make audio (Kaldi "cmd |" wav.scp entries, Lhotse command sources).
  // Off: such an item is rejected naming the command, never run (a manifest is data, and a
  // command in it runs with the user's rights).
  bool allow_pipes = false;
  // Relative audio paths of Lhotse and Kaldi manifests resolve here, as the producers resolve
  // them (the current directory by default).
  std::string base_dir;

  // HF parquet (hf_parquet.h): the Python whose pyarrow reads the files, and the columns of
  // the audio ({bytes, path}), the transcript and the record key (absent: the audio's path).
  std::string python = "python3";
  std::string hf_audio = "audio";
  std::string hf_text = "text";
  std::string hf_id = "id";
  std::string hf_speaker;   // the speaker column ("": none)
  std::string hf_language;  // the language column ("": none)

  // The fields `shardify --keep-field` keeps (ImportItem::fields): the HF columns to read, and
  // the Kaldi utt2NAME files.
  std::vector<std::string> fields;
};

}  // namespace sluice::importers
