"""The compiled parts, each built when a C compiler is there.

- The simulator's core (sectormon/sim/_core.c), ``optional=True``: an install without a compiler
  still succeeds and the simulator runs its pure-Python model, which gives the same numbers
  (docs/sim.md, "The compiled core").
- The recording reader's row check (sectormon/io/_rows.c), ``optional=True`` likewise: without it
  the reader runs the same check in Python (sectormon/io/native_rows.py).
- The marker library marked programs link (sectormon/regions/markers.c and api.c): a plain shared library,
  ``sectormon/regions/lib/libsectormon-markers.so``, so ``-L DIR -lsectormon-markers`` links it like
  any other. A failed build only warns: the rest installs and ``sectormon markers`` says what is
  missing (docs/regions.md).
- The QEMU plugin that traces a real program (sectormon/sim/qemu/plugin.c), a plain shared library
  ``sectormon/sim/qemu/lib/sectormon-qemu.so`` QEMU loads with ``-plugin``, and the consumer of its
  ring with the captured threads' reader (sectormon/sim/qemu/_capture.c and reader.c),
  ``optional=True``. Either failing only warns: ``sectormon sim -- CMD`` says what is missing
  (docs/sim.md, "Real programs").
- The shim preloaded into a traced dynamic program (sectormon/sim/qemu/shim.c), which reports its
  heap blocks, stacks and marker calls: ``sectormon/sim/qemu/lib/sectormon-shim-ARCH.so``, for the
  host's architecture with the host compiler and for aarch64 with ``aarch64-linux-gnu-gcc`` when
  that cross compiler is there. A failed build only warns: ``sectormon sim -- CMD`` then names
  global variables only, and says so.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COMPILE_ARGS = ["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"]
"""The compiled modules' flags (the optional extensions share them)."""

MARKER_SOURCES = ["sectormon/regions/markers.c", "sectormon/regions/api.c"]
MARKER_INCLUDES = ["sectormon/regions/include", "sectormon/regions"]
MARKER_LIBRARY = "sectormon-markers"
QEMU_PLUGIN_SOURCES = ["sectormon/sim/qemu/plugin.c"]
QEMU_PLUGIN = "sectormon-qemu.so"
QEMU_SHIM_SOURCE = "sectormon/sim/qemu/shim.c"
# -fexceptions: a C++ exception thrown by operator new passes through the shim's wrapper (shim.c)
SHIM_FLAGS = ["-O2", "-std=c11", "-fPIC", "-shared", "-fvisibility=hidden", "-fexceptions", "-Wall", "-Wextra"]
SHIM_FLAGS += ["-pthread"]


class BuildWithMarkers(build_ext):
    """build_ext that also links the marker library into the package's ``regions/lib``."""

    def run(self) -> None:
        super().run()
        self._build_marker_library()
        self._build_qemu_plugin()
        self._build_qemu_shims()

    def _build_marker_library(self) -> None:
        # Imported here: setuptools vendors distutils, and these names exist only once it is set up.
        from distutils.errors import CCompilerError, DistutilsExecError, DistutilsPlatformError

        if self.inplace:
            out_dir = os.path.join("sectormon", "regions", "lib")
        else:
            out_dir = os.path.join(self.build_lib, "sectormon", "regions", "lib")
        os.makedirs(out_dir, exist_ok=True)
        try:
            objects = self.compiler.compile(
                MARKER_SOURCES,
                output_dir=self.build_temp,
                include_dirs=MARKER_INCLUDES,
                extra_postargs=[*COMPILE_ARGS, "-fPIC"],
            )
            self.compiler.link_shared_object(
                objects,
                os.path.join(out_dir, f"lib{MARKER_LIBRARY}.so"),
                extra_postargs=["-pthread", f"-Wl,-soname,lib{MARKER_LIBRARY}.so"],
            )
        except (CCompilerError, DistutilsExecError, DistutilsPlatformError, OSError) as exc:
            self.warn(f"the marker library was not built ({exc}): `sectormon markers` will say so")

    def _build_qemu_plugin(self) -> None:
        from distutils.errors import CCompilerError, DistutilsExecError, DistutilsPlatformError

        parts = ("sectormon", "sim", "qemu", "lib")
        out_dir = os.path.join(*parts) if self.inplace else os.path.join(self.build_lib, *parts)
        os.makedirs(out_dir, exist_ok=True)
        try:
            objects = self.compiler.compile(
                QEMU_PLUGIN_SOURCES,
                output_dir=self.build_temp,
                extra_postargs=["-O2", "-std=c11", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra"],
            )
            # QEMU resolves the plugin API's symbols when it loads the plugin: they are undefined here.
            self.compiler.link_shared_object(
                objects, os.path.join(out_dir, QEMU_PLUGIN), extra_postargs=["-pthread"]
            )
        except (CCompilerError, DistutilsExecError, DistutilsPlatformError, OSError) as exc:
            self.warn(f"the QEMU plugin was not built ({exc}): `sectormon sim -- CMD` will say so")

    def _build_qemu_shims(self) -> None:
        parts = ("sectormon", "sim", "qemu", "lib")
        out_dir = os.path.join(*parts) if self.inplace else os.path.join(self.build_lib, *parts)
        os.makedirs(out_dir, exist_ok=True)
        host = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
        compilers = {host: os.environ.get("CC", "cc")}
        if host != "aarch64" and shutil.which("aarch64-linux-gnu-gcc"):
            compilers["aarch64"] = "aarch64-linux-gnu-gcc"
        for arch, compiler in compilers.items():
            out = os.path.join(out_dir, f"sectormon-shim-{arch}.so")
            command = [*compiler.split(), *SHIM_FLAGS, "-o", out, QEMU_SHIM_SOURCE, "-ldl"]
            try:
                subprocess.run(command, check=True, capture_output=True, text=True)
            except (OSError, subprocess.CalledProcessError) as exc:
                detail = exc.stderr.strip() if isinstance(exc, subprocess.CalledProcessError) else str(exc)
                self.warn(
                    f"the {arch} shim was not built ({detail[:300]}): `sectormon sim -- CMD` on {arch} "
                    "programs names global variables only"
                )


setup(
    cmdclass={"build_ext": BuildWithMarkers},
    ext_modules=[
        Extension(
            "sectormon.sim._core",
            ["sectormon/sim/_core.c"],
            optional=True,
            extra_compile_args=COMPILE_ARGS,
        ),
        Extension(
            "sectormon.io._rows", ["sectormon/io/_rows.c"], optional=True, extra_compile_args=COMPILE_ARGS
        ),
        Extension(
            "sectormon.sim.qemu._capture",
            ["sectormon/sim/qemu/_capture.c", "sectormon/sim/qemu/reader.c"],
            optional=True,
            extra_compile_args=COMPILE_ARGS,
        ),
    ],
)
