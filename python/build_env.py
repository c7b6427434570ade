"""Run by python/meson.build with the Python the package is built for: prints, one `key=value` a
line, where that Python's environment (pip's isolated build environment, a venv, conda) has the
build's header-only dependencies, so the build takes them from there before the system's.

  pybind11_include, pybind11_version: the pybind11 package importable here (PyPI's wheel ships
      its headers inside the package; Debian's pybind11-dev has no Python module).
  dlpack_include: an include directory of this environment holding dlpack/dlpack.h (conda's
      dlpack package; PyPI has none that ships the header).
"""
import os
import sys
import sysconfig

try:
    import pybind11

    print("pybind11_include=" + pybind11.get_include())
    print("pybind11_version=" + pybind11.__version__)
except ImportError:
    pass

for d in (os.path.join(sys.prefix, "include"), sysconfig.get_config_var("INCLUDEDIR")):
    if d and os.path.isfile(os.path.join(d, "dlpack", "dlpack.h")):
        print("dlpack_include=" + os.path.realpath(d))
        break
