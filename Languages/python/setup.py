"""The wheel carries its own libfilecoord (issue 43), so that `pip install ./Languages/python` needs no other step.

At build time (pip's `build_py`), in this order:

- FILECOORD_BUNDLE=0: nothing is bundled; the package then loads an installed libfilecoord (the Debian package
  libfilecoord1, or FILECOORD_LIBRARY). The repository's own tests build it so.
- A Swift toolchain (`swift` on PATH, or /opt/swift/usr/bin) and the repository around this folder: the library is
  built by scripts/build-static.sh (Swift's runtime linked in; a release build, minutes the first time) and copied
  into the package as filecoord/_lib/libfilecoord.so.1. The wheel is then tagged for this platform.
- Otherwise, an installed libfilecoord.so.1 the loader finds (the Debian package): nothing is bundled.
- Otherwise the build fails and says what to install.
"""

import ctypes
import os
import shutil
import subprocess
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(HERE))
BUILD_SCRIPT = os.path.join(REPOSITORY, "scripts", "build-static.sh")
LIBRARY = "libfilecoord.so.1"


def _swift():
    """The Swift toolchain's `swift`, or None."""
    found = shutil.which("swift") or shutil.which("swift", path="/opt/swift/usr/bin")
    return found


def _installed_library():
    """Whether the loader finds an installed libfilecoord.so.1."""
    try:
        ctypes.CDLL(LIBRARY)
        return True
    except OSError:
        return False


def _bundle():
    """Whether this build puts libfilecoord inside the package (see the module's docstring)."""
    if os.environ.get("FILECOORD_BUNDLE") == "0":
        return False
    if _swift() and os.path.isfile(BUILD_SCRIPT):
        return True
    if _installed_library():
        return False
    raise SystemExit(
        "filecoord: cannot build libfilecoord (no Swift toolchain, or not inside the swift-file-coordination "
        "repository) and no installed %s was found: install the Debian package libfilecoord1 "
        "(scripts/package-deb.sh), or a Swift toolchain (swift.org) and build from the repository" % LIBRARY
    )


BUNDLE = _bundle()


class BuildWithLibrary(build_py):
    """build_py, then libfilecoord built with scripts/build-static.sh into filecoord/_lib/."""

    def run(self):
        super().run()
        if not BUNDLE:
            return
        environment = dict(os.environ)
        swift = _swift()
        environment["PATH"] = os.path.dirname(swift) + os.pathsep + environment.get("PATH", "")
        with tempfile.TemporaryDirectory(prefix="filecoord-wheel-") as out:
            subprocess.run(["bash", BUILD_SCRIPT, out, "library"], check=True, env=environment)
            target = os.path.join(self.build_lib, "filecoord", "_lib")
            os.makedirs(target, exist_ok=True)
            shutil.copy2(os.path.join(out, "lib", LIBRARY), os.path.join(target, LIBRARY))


class PlatformDistribution(Distribution):
    """A wheel with a native library in it is this platform's, not pure Python."""

    def has_ext_modules(self):
        return BUNDLE


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=PlatformDistribution)
