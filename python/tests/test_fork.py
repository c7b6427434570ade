"""fork() while a loader is mid-epoch: the child has a copy of the Loader but none of its threads.
It must be able to exit (its copy is abandoned, never stopped: stopping it would wait for threads
that do not exist there), and using the copy is a clear error; the parent goes on untouched.

Each case runs in a process of its own (a fork of pytest itself would run pytest twice), with a
bound on its time: before the fix, the child hung in the loader's destructor."""
import subprocess
import sys

PROLOGUE = """
import os, sys, time
import sluice
# A pool of a few batches for an epoch of dozens: the pipeline's thread is still at work (waiting
# for the consumer to give a batch back) when the process forks.
loader = sluice.Loader(sys.argv[1], seed=1, max_frames=500, threads=2, ready_batches=1,
                       consumer_batches=1)
it = iter(loader)
next(it)
"""

OS_FORK = PROLOGUE + """
pid = os.fork()
if pid == 0:
    if sys.argv[2] == "use":
        for call in (lambda: next(it), loader.state_dict, loader.stats, lambda: len(loader),
                     lambda: list(loader), lambda: loader.feature_info):
            try:
                call()
                print("child: no error", flush=True)
            except RuntimeError as e:
                print("child error:", e, flush=True)
        loader.close()  # abandons the copy
    sys.exit(0)  # a normal exit: the interpreter destroys the child's copy of the loader
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("child exit", os.waitstatus_to_exitcode(status), flush=True)
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print("child hung", flush=True)
rest = sum(1 for _ in it)
print("parent", 1 + rest, len(loader), flush=True)
"""

MULTIPROCESSING_FORK = PROLOGUE + """
import multiprocessing

def use(loader):
    try:
        next(iter(loader))
    except RuntimeError as e:
        print("child error:", e, flush=True)
        sys.exit(3)
    sys.exit(4)

def ignore(loader):
    del loader

for target in (use, ignore):
    p = multiprocessing.get_context("fork").Process(target=target, args=(loader,))
    p.start()
    p.join(20)
    if p.exitcode is None:
        p.kill()
        p.join()
        print("child hung", flush=True)
    else:
        print("child exit", p.exitcode, flush=True)
rest = sum(1 for _ in it)
print("parent", 1 + rest, len(loader), flush=True)
"""


def run(script, *args):
    r = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def check_parent(lines):
    parent = [line.split() for line in lines if line.startswith("parent")]
    assert len(parent) == 1 and parent[0][1] == parent[0][2], lines


def test_a_child_forked_mid_epoch_that_never_uses_the_loader_exits(dataset):
    lines = run(OS_FORK, dataset, "ignore")
    assert "child exit 0" in lines, lines
    check_parent(lines)


def test_a_forked_child_using_the_loader_gets_a_clear_error_and_exits(dataset):
    lines = run(OS_FORK, dataset, "use")
    assert "child exit 0" in lines, lines
    errors = [line for line in lines if line.startswith("child error:")]
    assert len(errors) == 6, lines
    for e in errors:
        assert "forked from process" in e and "create the Loader in the process" in e, e
        assert "'spawn'" in e, e
    check_parent(lines)


def test_multiprocessing_fork_children_exit_and_the_parent_goes_on(dataset):
    lines = run(MULTIPROCESSING_FORK, dataset)
    assert lines.count("child exit 3") == 1, lines  # `use`: the clear error
    assert lines.count("child exit 0") == 1, lines  # `ignore`
    assert any("child error:" in line and "'spawn'" in line for line in lines), lines
    check_parent(lines)
