"""Reads a `shardify export --to lhotse` folder with lhotse itself (tests/tools/export_test.cc):
CUTS is loaded as a CutSet, checked by lhotse's own validation (with the audio read), and each
cut's audio, loaded through lhotse, is written to OUT/<n>.f32 (float32 little-endian, channels
after one another) beside OUT/cuts.json, which lists what lhotse made of each cut.

usage: lhotse_read.py CUTS OUT
"""
import json
import sys

import lhotse
from lhotse.qa import validate


def main():
    cuts_path, out = sys.argv[1], sys.argv[2]
    cuts = lhotse.CutSet.from_file(cuts_path)
    validate(cuts, read_data=True)
    rows = []
    for n, cut in enumerate(cuts):
        audio = cut.load_audio()  # [channels, samples] float32
        samples_file = f"{out}/{n}.f32"
        audio.astype("<f4").tofile(samples_file)
        rows.append({
            "type": type(cut).__name__,
            "id": cut.id,
            "recording_id": cut.recording_id,
            "duration": cut.duration,
            "num_samples": cut.num_samples,
            "sampling_rate": cut.sampling_rate,
            "channels": int(audio.shape[0]),
            "texts": [s.text for s in cut.supervisions],
            "samples_file": samples_file,
        })
    with open(f"{out}/cuts.json", "w") as f:
        json.dump({"lhotse": lhotse.__version__, "cuts": rows}, f)


if __name__ == "__main__":
    main()
