"""Ctrl-C while sluice waits for remote data that does not come (a server holding its answers,
stall_server.py): Loader() and next() raise KeyboardInterrupt within a few seconds, the process
exits, and a loader whose next() was interrupted still resumes and closes.

Each case is a child process given SIGINT once the server holds one of its requests: before the
fix, the signal waited for the data (the server holds it for up to 120 s)."""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from stall_server import StallServer

# The signal must be acted on within this; the wait checks every 100 ms.
PROMPT_S = 5

OPEN = """
import sys
import sluice
print("opening", flush=True)
sluice.Loader(sys.argv[1], seed=1)
print("opened", flush=True)
"""

ITERATE = """
import json, sys
import sluice
loader = sluice.Loader(sys.argv[1], seed=1, max_frames=1500, threads=2)
print("opened", flush=True)
sys.stdin.readline()
print("iterating", flush=True)
if sys.argv[2] == "uncaught":
    for batch in loader:
        print("batch", flush=True)
    sys.exit(0)
try:
    next(iter(loader))
    print("no interrupt", flush=True)
except KeyboardInterrupt:
    print("interrupted", json.dumps(loader.state_dict()), flush=True)
sys.stdin.readline()  # the server answers again
state = loader.state_dict()
loader.load_state_dict(state)
print("rest", sum(1 for _ in loader), len(loader) - state["batches"], flush=True)
loader.close()
print("closed", flush=True)
"""

# The epoch starts (through the binding, as the first next() would) and its reads go to the
# server, which holds them; then Python code raises. No wait of sluice's saw the signal, so the
# binding cannot know that a read is stuck when the exiting interpreter frees the loader.
RAISE_WHILE_A_READ_WAITS = """
import json, sys
import sluice
loader = sluice.Loader(sys.argv[1], seed=1, max_frames=1500, threads=2)
print("opened", flush=True)
sys.stdin.readline()
loader._core.start(json.dumps({"epoch": 0, "batches": 0}))
print("started", flush=True)
sys.stdin.readline()
raise KeyboardInterrupt
"""


@pytest.fixture
def server(dataset):
    root, name = os.path.split(dataset)
    s = StallServer(root)
    s.dataset_url = f"{s.url}/{name}"
    yield s
    s.close()


class Child:
    """A Python child process whose output lines are read with a timeout."""

    def __init__(self, script, *args):
        # SIGINT back to its default in the child: a suite started in the background (`cmd &`
        # from a script) runs with SIGINT ignored, which every child inherits, and a Python
        # started so installs no KeyboardInterrupt handler.
        self.proc = subprocess.Popen([sys.executable, "-c", script, *args], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                      signal.SIG_DFL))
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def line(self, timeout=60):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            pytest.fail(f"no output from the child within {timeout} s")

    def send(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def interrupt(self, server):
        """SIGINT once the server holds a request of the child's."""
        assert server.stalled.wait(60), "the child never reached the held request"
        self.proc.send_signal(signal.SIGINT)
        return time.monotonic()

    def wait(self, timeout):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the child still ran {timeout} s after SIGINT")
        return self.proc.stderr.read()

    def kill(self):
        self.proc.kill()
        self.proc.wait()


def test_ctrl_c_while_loader_opens_raises_keyboard_interrupt(server):
    server.stall = "manifest.json"
    child = Child(OPEN, server.dataset_url)
    assert child.line() == "opening"
    t0 = child.interrupt(server)
    err = child.wait(PROMPT_S)
    assert time.monotonic() - t0 < PROMPT_S
    assert "KeyboardInterrupt" in err, err
    assert child.proc.returncode == -signal.SIGINT, err


def test_ctrl_c_while_next_waits_raises_and_the_process_exits(server):
    child = Child(ITERATE, server.dataset_url, "uncaught")
    assert child.line() == "opened"
    server.stall = "shard-"
    child.send("go")
    assert child.line() == "iterating"
    t0 = child.interrupt(server)
    err = child.wait(PROMPT_S)
    assert time.monotonic() - t0 < PROMPT_S
    assert "KeyboardInterrupt" in err, err
    assert child.proc.returncode == -signal.SIGINT, err


def test_a_loader_interrupted_in_next_resumes_and_closes(server):
    child = Child(ITERATE, server.dataset_url, "caught")
    assert child.line() == "opened"
    server.stall = "shard-"
    child.send("go")
    assert child.line() == "iterating"
    child.interrupt(server)
    words = child.line(timeout=PROMPT_S).split(" ", 1)
    assert words[0] == "interrupted", words
    # Nothing was taken: the state is still the epoch's start.
    assert json.loads(words[1]) == {"epoch": 0, "batches": 0, "world": 1}
    server.release()
    child.send("go")
    rest = child.line().split()
    assert rest[0] == "rest" and rest[1] == rest[2] and int(rest[1]) > 0, rest
    assert child.line() == "closed"
    err = child.wait(60)
    assert child.proc.returncode == 0, err


def test_an_exception_raised_while_a_read_waits_lets_the_process_exit(server):
    child = Child(RAISE_WHILE_A_READ_WAITS, server.dataset_url)
    assert child.line() == "opened"
    server.stall = "shard-"
    child.send("go")
    assert child.line() == "started"
    assert server.stalled.wait(60), "the epoch never reached the held request"
    t0 = time.monotonic()
    child.send("raise")
    err = child.wait(PROMPT_S)
    assert time.monotonic() - t0 < PROMPT_S
    assert "KeyboardInterrupt" in err, err
