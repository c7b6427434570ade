#!/usr/bin/env python3
"""tools/gpu-session without a GPU (suite 'gpu-session'): a fake bundle of shell scripts stands
for the programs, so the budget logic, the time caps, the report and its file count, the
SIGTERM path and SLUICE_REQUIRE_GPU are checked in seconds.

  gpu_session_test.py SOURCE_ROOT
"""
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

ROOT = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else \
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SESSION = os.path.join(ROOT, "tools", "gpu-session")

# A gtest stand-in: writes the XML gtest would (one passing case) and fails when
# SLUICE_REQUIRE_GPU is not 1, which gpu-session must set for every test program.
GTEST = """#!/bin/sh
for a in "$@"; do case "$a" in --gtest_output=xml:*) xml="${a#--gtest_output=xml:}" ;; esac; done
[ "$SLUICE_REQUIRE_GPU" = 1 ] || { echo "SLUICE_REQUIRE_GPU not set"; exit 3; }
[ -n "$FAKE_SLEEP" ] && sleep "$FAKE_SLEEP"
cat > "$xml" <<EOF
<testsuites tests="1"><testsuite name="Fake" tests="1"><testcase classname="Fake" name="Passes"/></testsuite></testsuites>
EOF
echo "[  PASSED  ] 1 test."
"""
# A program that never ends (its child sleep too): the cap must kill the whole process group.
HANG = "#!/bin/sh\nsleep 300 &\necho started $!\nwait\n"


def make_bundle(root, hang=()):
    files = {}
    for name in ("gpu_model_tests", "gpu_device_tests", "gpu_host_tests", "train_cuda_tests"):
        files["tests/" + name] = HANG if name in hang else GTEST
    for name in ("sluice-train", "sluice-bench", "shardify", "reference-case"):
        files["bin/" + name] = "#!/bin/sh\necho fake $0 \"$@\"\n"
    files["corpus24/manifest.jsonl"] = "{}\n"
    files["dataset/manifest.json"] = "{}\n"
    manifest = {"commit": "f" * 40, "made": "2026-01-01T00:00:00Z", "cuda_archs": ["sm_90"],
                "needs": {"GLIBC": "GLIBC_2.2.5"}, "files": {}}
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)
        manifest["files"][rel] = {"bytes": len(text.encode()),
                                  "sha256": hashlib.sha256(text.encode()).hexdigest()}
    os.makedirs(os.path.join(root, "lib"), exist_ok=True)
    with open(os.path.join(root, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    return root


class GpuSession(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.out = os.path.join(self.dir, "out")
        self.work = os.path.join(self.dir, "work")

    def tearDown(self):
        self.tmp.cleanup()

    def session(self, bundle, *args, env=None, wait=True):
        cmd = [sys.executable, SESSION, bundle, "--out", self.out, "--work", self.work] + list(args)
        e = dict(os.environ)
        e.pop("OUT", None)
        e.update(env or {})
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=e)
        if not wait:
            return p
        out, _ = p.communicate(timeout=60)
        return p.returncode, out

    def report(self):
        with open(os.path.join(self.out, "report.json")) as f:
            return json.load(f)

    def check_out_folder(self, out):
        self.assertLessEqual(len(os.listdir(self.out)), 4, os.listdir(self.out))
        self.assertEqual(sorted(os.listdir(self.out)), ["logs.tar.gz", "report.json", "report.md"])
        # The summary table is what the device tool's output tail shows: it must come last.
        last = [l for l in out.strip().splitlines()][-1]
        self.assertTrue(last.startswith("| "), out[-2000:])
        with tarfile.open(os.path.join(self.out, "logs.tar.gz")) as t:
            self.assertTrue(any(n.startswith("logs/") for n in t.getnames()))

    def test_dry_run_fits_the_budget_and_skips_what_no_longer_fits(self):
        bundle = make_bundle(os.path.join(self.dir, "b"))
        t0 = time.monotonic()
        code, out = self.session(bundle, "--budget", "200", "--dry-run")
        self.assertLess(time.monotonic() - t0, 30, "a dry run must not wait for its estimates")
        self.assertEqual(code, 0, out)
        rep = self.report()
        self.assertTrue(rep["dry_run"])
        statuses = {r["name"]: r["status"] for r in rep["steps"]}
        # Estimates 10+30+30+30+60 = 160 of 195 s (plus the env check's real second or two): the
        # test programs run, memcheck (60) is the first that no longer fits, and every later
        # step is skipped with the reason.
        for name in ("env", "tests-model", "tests-device", "tests-host", "tests-trainer"):
            self.assertEqual(statuses[name], "dry-run", rep)
        skipped = [r for r in rep["steps"] if r["status"] == "skipped"]
        self.assertEqual(skipped[0]["name"], "memcheck", rep)
        self.assertRegex(skipped[0]["reason"], r"^needs about 60 s, 3\d s of the budget left$")
        # train-tiny (40 s) does not fit in 35 s either, but nothing smaller is left after it.
        self.assertEqual(len(rep["steps"]), 13)  # racecheck and profile last
        self.assertTrue(all(r["status"] == "skipped" for r in rep["steps"][5:]), rep)
        self.assertTrue(rep["finished"])
        self.check_out_folder(out)
        # The commands the steps would have run are logged, with the bundle's programs.
        with tarfile.open(os.path.join(self.out, "logs.tar.gz")) as t:
            log = t.extractfile("logs/tests-model.log").read().decode()
        self.assertIn("gpu_model_tests --gtest_filter=*", log)

    def test_a_large_budget_runs_every_step_and_a_missing_program_fails_its_step(self):
        bundle = make_bundle(os.path.join(self.dir, "b"))
        os.remove(os.path.join(bundle, "bin", "sluice-bench"))
        code, out = self.session(bundle, "--budget", "2000", "--dry-run")
        self.assertEqual(code, 1, out)
        rep = self.report()
        statuses = {r["name"]: r["status"] for r in rep["steps"]}
        self.assertNotIn("skipped", statuses.values(), rep)
        self.assertEqual(statuses["bench-feed"], "fail")
        self.assertIn("bin/sluice-bench", [r for r in rep["steps"]
                                           if r["name"] == "bench-feed"][0]["reason"])
        # The env step's checksum check sees the file the manifest lists and the bundle lacks.
        self.assertEqual(statuses["env"], "fail")
        self.check_out_folder(out)

    def test_a_step_is_killed_at_its_cap_and_the_next_one_no_longer_fits(self):
        bundle = make_bundle(os.path.join(self.dir, "b"), hang=("gpu_model_tests",))
        t0 = time.monotonic()
        code, out = self.session(bundle, "--budget", "12", "--only",
                                 "tests-model,tests-device", "--cap", "tests-model=2")
        elapsed = time.monotonic() - t0
        self.assertEqual(code, 1, out)
        self.assertLess(elapsed, 15, out)
        rep = self.report()
        model, device = rep["steps"]
        self.assertEqual(model["status"], "timeout", rep)
        self.assertLess(model["seconds"], 6, rep)
        self.assertEqual(device["status"], "skipped", rep)
        self.assertIn("of the budget left", device["reason"])
        # The hung program's child was killed with it.
        with open(os.path.join(self.work, "logs", "tests-model.log")) as f:
            pid = int(f.read().split("started ")[1].split()[0])
        try:
            with open("/proc/%d/cmdline" % pid) as f:
                alive = "sleep" in f.read()
        except OSError:
            alive = False
        self.assertFalse(alive, pid)
        self.check_out_folder(out)

    def test_test_programs_run_with_slUICE_REQUIRE_GPU_and_pass(self):
        bundle = make_bundle(os.path.join(self.dir, "b"))
        code, out = self.session(bundle, "--budget", "60", "--only", "tests-model,tests-host")
        self.assertEqual(code, 0, out)
        rep = self.report()
        self.assertEqual([r["status"] for r in rep["steps"]], ["pass", "pass"], rep)
        self.assertEqual(rep["steps"][0]["figures"]["tests"], 1)

    def test_sigterm_still_writes_the_report(self):
        bundle = make_bundle(os.path.join(self.dir, "b"), hang=("gpu_device_tests",))
        p = self.session(bundle, "--budget", "120", "--only", "tests-model,tests-device",
                         wait=False)
        deadline = time.monotonic() + 20
        log = os.path.join(self.work, "logs", "tests-device.log")
        def started():
            try:
                with open(log) as f:
                    return "started" in f.read()
            except OSError:
                return False
        while time.monotonic() < deadline and not started():
            time.sleep(0.05)  # polls for the hung step to have started; bounded above
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=20)
        self.assertNotEqual(p.returncode, 0)
        rep = self.report()
        self.assertEqual(rep["interrupted"], "SIGTERM")
        self.assertEqual([r["status"] for r in rep["steps"]], ["pass", "interrupted"], rep)
        self.check_out_folder(out)

    def test_an_archived_bundle_is_unpacked(self):
        bundle = make_bundle(os.path.join(self.dir, "b"))
        folder = os.path.join(self.dir, "packed")
        os.makedirs(folder)
        with tarfile.open(os.path.join(folder, "bundle.tar.xz"), "w:xz") as t:
            t.add(bundle, arcname=".")
        code, out = self.session(folder, "--budget", "60", "--only", "tests-host")
        self.assertEqual(code, 0, out)
        self.assertTrue(os.path.exists(os.path.join(self.work, "bundle", "manifest.json")))

    def test_unknown_step_is_a_usage_error(self):
        code, out = self.session(self.dir, "--budget", "60", "--only", "tests-nothing")
        self.assertEqual(code, 2, out)
        self.assertIn("no step 'tests-nothing'", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
