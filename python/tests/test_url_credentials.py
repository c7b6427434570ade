"""A password in a dataset URL (http://user:pass@host/...) reaches the server and nothing Python
shows: exception text and repr(sluice.Loader) name the URL as http://user:***@host/...
(storage/url.h RedactUrl). The datasets are served by a real nginx on loopback, as in
tests/storage; without nginx the tests that need it skip, saying why."""
import os
import shutil
import socket
import subprocess
import time

import pytest

import sluice
from conftest import SMALL

MARKER = "pw-3f9a27-never-shown"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(dataset, tmp_path_factory):
    """http://127.0.0.1:PORT serving the dataset's parent directory (the dataset as /ds)."""
    nginx = os.environ.get("NGINX") or shutil.which("nginx") or (
        "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if nginx is None:
        pytest.skip("nginx is not installed (Debian: nginx-light; ./run.sh installs it)")
    work = tmp_path_factory.mktemp("nginx")
    port = _free_port()
    temp = "".join(f"  {k}_temp_path {work}/{k};\n"
                   for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (work / "nginx.conf").write_text(
        f"daemon off;\nmaster_process off;\nworker_processes 1;\npid {work}/nginx.pid;\n"
        f"error_log {work}/error.log;\nevents {{ worker_connections 64; }}\n"
        f"http {{\n  access_log off;\n{temp}"
        f"  server {{ listen 127.0.0.1:{port}; root {os.path.dirname(dataset)}; }}\n}}\n")
    proc = subprocess.Popen([nginx, "-p", str(work), "-c", str(work / "nginx.conf"),
                             "-e", str(work / "error.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 5
    while not _accepts(port) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # polling a port: nginx has no readiness signal to wait on
    if not _accepts(port):
        proc.kill()
        proc.wait()
        pytest.skip(f"nginx did not start; see {work}/error.log")
    yield f"127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


def test_redact_url_hides_the_password():
    assert sluice._sluice.redact_url(f"http://u:{MARKER}@h/x") == "http://u:***@h/x"
    assert sluice._sluice.redact_url("/local/dir") == "/local/dir"


@pytest.mark.parametrize("path", [
    f"http://sluice:{MARKER}@127.0.0.1:1/ds",
    {f"http://sluice:{MARKER}@127.0.0.1:1/ds": 1},
])
def test_exception_text_hides_the_password(path):
    with pytest.raises(sluice.Error) as e:
        sluice.Loader(path, seed=1, retries=0)
    assert MARKER not in str(e.value) and MARKER not in repr(e.value)
    assert "http://sluice:***@127.0.0.1:1/ds" in str(e.value)


def test_malformed_mixture_pair_hides_the_password():
    with pytest.raises(TypeError) as e:
        sluice.Loader([(f"http://sluice:{MARKER}@127.0.0.1:1/ds", 1, "extra")], seed=1)
    assert MARKER not in str(e.value)
    assert "http://sluice:***@127.0.0.1:1/ds" in str(e.value)


def test_exception_text_of_a_mixture_source_hides_the_password(server, dataset):
    bad = f"http://sluice:{MARKER}@127.0.0.1:1/ds"
    with pytest.raises(sluice.Error) as e:
        sluice.Loader({f"http://sluice:{MARKER}@{server}/ds": 1, bad: 1}, seed=1, retries=0,
                      **SMALL)
    assert MARKER not in str(e.value)
    assert "http://sluice:***@127.0.0.1:1/ds" in str(e.value)


def test_loader_repr_hides_the_password(server, dataset):
    url = f"http://sluice:{MARKER}@{server}/ds"
    loader = sluice.Loader(url, seed=1, **SMALL)
    assert next(iter(loader)) is not None  # the password-bearing URL is the one read
    assert MARKER not in repr(loader)
    assert f"'http://sluice:***@{server}/ds'" in repr(loader)
    mixture = sluice.Loader({url: 2, dataset: 1}, seed=1, **SMALL)
    assert MARKER not in repr(mixture)
    assert f"'http://sluice:***@{server}/ds': 2.0" in repr(mixture)
    loader.close()
    mixture.close()
