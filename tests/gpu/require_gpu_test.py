#!/usr/bin/env python3
"""SLUICE_REQUIRE_GPU=1 turns the GPU tests' skips into failures (tests/testing/require_gpu.h).

On a machine without a usable GPU, each test program given runs twice with a filter picking the
cases that need a device: without the variable it must pass with every case skipped, with it it
must fail naming the variable and the runtime's reason. On a machine with a GPU nothing is
skipped, so the check has nothing to show: exit 77 (meson's skip).

  require_gpu_test.py PROGRAM[=GTEST_FILTER] ...
"""
import os
import re
import subprocess
import sys


def run(program, gtest_filter, require):
    env = dict(os.environ)
    env.pop("SLUICE_REQUIRE_GPU", None)
    if require:
        env["SLUICE_REQUIRE_GPU"] = "1"
    args = [program, "--gtest_filter=" + gtest_filter]
    p = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    return p.returncode, p.stdout


def main():
    failures = []
    checked = 0
    for spec in sys.argv[1:]:
        program, _, gtest_filter = spec.partition("=")
        name = os.path.basename(program)
        code, out = run(program, gtest_filter or "*", require=False)
        skipped = re.search(r"\[  SKIPPED \] (\d+) tests?", out)
        if code == 0 and not skipped:
            print(f"{name}: nothing skipped: a GPU is present, nothing to check here")
            continue
        checked += 1
        if code != 0:
            failures.append(f"{name} without SLUICE_REQUIRE_GPU: exit {code}, expected 0 with "
                            f"skips\n{out[-3000:]}")
            continue
        code_r, out_r = run(program, gtest_filter or "*", require=True)
        print(f"{name}: {skipped.group(1)} skipped without the variable; exit {code_r} with "
              "SLUICE_REQUIRE_GPU=1")
        if code_r == 0:
            failures.append(f"{name} with SLUICE_REQUIRE_GPU=1: exit 0, expected a failure\n"
                            f"{out_r[-3000:]}")
        elif "SLUICE_REQUIRE_GPU=1 and no usable GPU" not in out_r:
            failures.append(f"{name} with SLUICE_REQUIRE_GPU=1: failed without naming the "
                            f"variable\n{out_r[-3000:]}")
        elif re.search(r"\[  SKIPPED \] \d+ test", out_r):
            failures.append(f"{name} with SLUICE_REQUIRE_GPU=1: still skips\n{out_r[-3000:]}")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    return 0 if checked else 77


if __name__ == "__main__":
    sys.exit(main())
