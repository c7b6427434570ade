"""pytest plugin (`-p no_torch`, with this folder on PYTHONPATH) for python/tests in an environment
without torch: a clean venv from `pip install .` or from the wheel, where numpy comes from PyPI and
torch (about 2 GB) is not installed.

Test modules that import torch, or helpers.py (which does), at their top are not collected; a test
that reaches `import torch` while it runs (the CTC loop of docs/python.md) is skipped, and the
summary counts it. Every other failure fails, so the torch-free part of the suite stays a test.
"""
import importlib.util
import re

import pytest

HAVE_TORCH = importlib.util.find_spec("torch") is not None
_TOP_IMPORT = re.compile(r"^(import|from)\s+(torch|helpers)\b", re.M)


def pytest_ignore_collect(collection_path, config):
    if HAVE_TORCH or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return bool(_TOP_IMPORT.search(collection_path.read_text(encoding="utf-8"))) or None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    e = call.excinfo
    if (not HAVE_TORCH and report.failed and e is not None and e.errisinstance(ModuleNotFoundError)
            and getattr(e.value, "name", None) == "torch"):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, "needs torch, not installed here")
