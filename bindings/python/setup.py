"""Builds pot._pot (SWIG, from include/pot.h) against an installed or in-tree libpot.

Where libpot is found, first match wins:

  POT_BUILD_DIR=/path/to/build   a CMake build tree of this repository: the
                                 header from its source tree (include/), the
                                 library from BUILD/src/libpot.so
  POT_PREFIX=/opt/pot            an install prefix (PREFIX/include/pot.h,
                                 PREFIX/lib*/libpot.so)
  pkg-config pot                 an installed libpot (PKG_CONFIG_PATH)

The extension gets a run path to the library's directory unless that is a
system directory. SWIG is the `swig` on PATH (or $SWIG).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
INTERFACE = HERE / "pot.i"
SYSTEM_LIBDIRS = {"/lib", "/usr/lib", "/lib64", "/usr/lib64"}


class LibpotNotFound(RuntimeError):
    pass


def _libdir_of(prefix):
    for sub in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"):
        d = prefix / sub
        if (d / "libpot.so").exists():
            return d
    raise LibpotNotFound(f"POT_PREFIX={prefix}: no lib*/libpot.so under it")


def find_libpot():
    """(include_dir, library_dir, origin) of the libpot to build against."""
    build = os.environ.get("POT_BUILD_DIR")
    if build:
        build = Path(build).resolve()
        cache = build / "CMakeCache.txt"
        if not cache.exists():
            raise LibpotNotFound(f"POT_BUILD_DIR={build}: no CMakeCache.txt (not a CMake build tree)")
        source = None
        for line in cache.read_text().splitlines():
            if line.startswith("CMAKE_HOME_DIRECTORY:INTERNAL="):
                source = Path(line.split("=", 1)[1])
        if source is None or not (source / "include" / "pot.h").exists():
            raise LibpotNotFound(f"POT_BUILD_DIR={build}: cannot find the source tree's include/pot.h")
        if not (build / "src" / "libpot.so").exists():
            raise LibpotNotFound(f"POT_BUILD_DIR={build}: src/libpot.so is not built")
        return source / "include", build / "src", f"build tree {build}"

    prefix = os.environ.get("POT_PREFIX")
    if prefix:
        prefix = Path(prefix).resolve()
        if not (prefix / "include" / "pot.h").exists():
            raise LibpotNotFound(f"POT_PREFIX={prefix}: no include/pot.h under it")
        return prefix / "include", _libdir_of(prefix), f"prefix {prefix}"

    pkg_config = os.environ.get("PKG_CONFIG", "pkg-config")
    if shutil.which(pkg_config):
        def var(name):
            out = subprocess.run([pkg_config, f"--variable={name}", "pot"], check=True,
                                 capture_output=True, text=True).stdout.strip()
            return Path(os.path.realpath(out))

        if subprocess.run([pkg_config, "--exists", "pot"]).returncode == 0:
            include, libdir = var("includedir"), var("libdir")
            if (include / "pot.h").exists():
                return include, libdir, f"pkg-config ({libdir})"
    raise LibpotNotFound(
        "libpot not found. Point the build at it with one of:\n"
        "  POT_BUILD_DIR=/path/to/pot/build      (a CMake build tree, e.g. the repository's build/)\n"
        "  POT_PREFIX=/path/to/prefix            (cmake --install build --prefix PREFIX)\n"
        "  PKG_CONFIG_PATH=PREFIX/lib/pkgconfig  (for `pkg-config pot`)")


def handle_types():
    """The handle types pot.i declares with POT_HANDLE(...)."""
    return set(re.findall(r"^POT_HANDLE\((pot_\w+),", INTERFACE.read_text(), re.M))


def check_wrapper(wrapper):
    """Fails when a pointer parameter of pot.h fell through to SWIG's default
    pointer typemap (a missing typemap: it would ask Python for a raw SWIG
    pointer). Only handle types may be converted with SWIG_ConvertPtr."""
    allowed = {f"SWIGTYPE_p_{t}" for t in handle_types()}
    bad = []
    for m in re.finditer(r"SWIG_ConvertPtr\((?:swig_obj\[\d+\]|args)\s*,([^;]*?)\);", wrapper.read_text()):
        args = m.group(1)
        desc = re.search(r"SWIGTYPE_p_\w+", args)
        if desc is None or desc.group(0) not in allowed:
            bad.append(args)
    if bad:
        raise RuntimeError("pot.i: pointer parameters without a typemap:\n  " + "\n  ".join(bad))


class BuildExt(build_ext):
    """Runs SWIG itself: the C wrapper goes to build_temp, the generated
    pot/_pot.py next to the extension (build_lib or, in place, src/pot)."""

    def finalize_options(self):
        super().finalize_options()
        include, libdir, origin = find_libpot()
        self.announce(f"pot: building against libpot from {origin}", level=2)
        for ext in self.extensions:
            ext.include_dirs.append(str(include))
            ext.library_dirs.append(str(libdir))
            if str(libdir) not in SYSTEM_LIBDIRS:
                ext.runtime_library_dirs.append(str(libdir))
        self._pot_include = include
        self._pot_libdir = libdir

    def _torch_version(self):
        """pot_replay_framework_version of the libpot built against, asked
        in a child process (loading libpot loads its LibTorch, which must
        not meet a torch this setup process may have imported)."""
        probe = ("import ctypes, sys\n"
                 "lib = ctypes.CDLL(sys.argv[1])\n"
                 "out, err = ctypes.c_char_p(), ctypes.c_void_p()\n"
                 "status = lib.pot_replay_framework_version(ctypes.byref(out), ctypes.byref(err))\n"
                 "print(out.value.decode() if status == 0 and out.value else '')\n")
        done = subprocess.run([sys.executable, "-c", probe, str(self._pot_libdir / "libpot.so")],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"pot: cannot load {self._pot_libdir / 'libpot.so'} to read its LibTorch version: "
                               f"{done.stderr.strip()}")
        return done.stdout.strip() or None

    def swig_sources(self, sources, extension):
        interfaces = [s for s in sources if s.endswith(".i")]
        if not interfaces:
            return sources
        swig = os.environ.get("SWIG", "swig")
        if not shutil.which(swig):
            raise RuntimeError("SWIG not found: install it (Debian: apt-get install swig) or set SWIG")
        temp = Path(self.build_temp)
        temp.mkdir(parents=True, exist_ok=True)
        outdir = Path(self.get_ext_fullpath(extension.name)).parent
        outdir.mkdir(parents=True, exist_ok=True)
        wrapper = temp / "pot_wrap.c"
        # stdint.i maps uint64_t to unsigned long on LP64 only when told.
        wordsize = ["-DSWIGWORDSIZE64"] if sys.maxsize > 2**32 and os.name == "posix" else []
        cmd = [swig, "-python", "-threads", "-interface", "_pot_c", "-Werror", *wordsize,
               f"-I{self._pot_include}", "-outdir", str(outdir), "-o", str(wrapper), str(INTERFACE)]
        self.announce("swig: " + " ".join(shlex.quote(c) for c in cmd), level=2)
        subprocess.run(cmd, check=True)
        check_wrapper(wrapper)
        (outdir / "_build_torch.py").write_text(
            '"""Written by setup.py: the LibTorch release libpot replays with (None: no replay layer)."""\n'
            f"TORCH_VERSION = {self._torch_version()!r}\n")
        return [s for s in sources if not s.endswith(".i")] + [str(wrapper)]


setup(
    ext_modules=[
        Extension(
            "pot._pot_c",
            sources=[str(INTERFACE.relative_to(HERE))],
            libraries=["pot"],
            extra_compile_args=["-Wall", "-Wno-unused-function", "-Wno-missing-field-initializers"],
        )
    ],
    cmdclass={"build_ext": BuildExt},
)
