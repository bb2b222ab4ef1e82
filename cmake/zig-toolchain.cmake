# Builds kdist with Zig's C/C++ toolchain (PyPI: ziglang) for an older glibc, so the wheel
# runs on every manylinux_2_28 system (RHEL 8, Ubuntu 20.04 and later): zig links against
# the glibc version named in the target, not the build machine's, and links libc++
# statically, so the extension needs no libstdc++ at run time. scripts/release.sh uses it:
#
#   pip wheel . -C cmake.define.CMAKE_TOOLCHAIN_FILE=$PWD/cmake/zig-toolchain.cmake \
#               -C cmake.define.KDIST_ZIG=/path/to/zig \
#               -C cmake.define.KDIST_ZIG_TARGET=x86_64-linux-gnu.2.28
#
# KDIST_ZIG: the zig executable (default: `zig` on the PATH; the ziglang package has one
# at <site-packages>/ziglang/zig). KDIST_ZIG_TARGET: zig's target triple with the glibc
# version (default: x86_64-linux-gnu.2.28); another architecture makes this a cross build
# (aarch64-linux-gnu.2.28).
#
# CMake wants one executable per tool, and zig is one executable with subcommands, so the
# toolchain writes small wrappers (cmake/zig-wrapper.sh.in) into the build folder.

set(KDIST_ZIG_TARGET "x86_64-linux-gnu.2.28" CACHE STRING
    "zig's target: <arch>-linux-gnu.<glibc version>")
if(NOT KDIST_ZIG)
  find_program(KDIST_ZIG zig)
endif()
if(NOT KDIST_ZIG OR NOT EXISTS "${KDIST_ZIG}")
  message(FATAL_ERROR
    "cmake/zig-toolchain.cmake: expected the zig executable in KDIST_ZIG or on the PATH, "
    "received KDIST_ZIG='${KDIST_ZIG}'. `pip install ziglang` and pass "
    "-DKDIST_ZIG=<site-packages>/ziglang/zig (scripts/release.sh does both)")
endif()
# try_compile() projects read this file again: hand them the same values.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES KDIST_ZIG KDIST_ZIG_TARGET)

string(REGEX MATCH "^[^-]+" kdist_zig_arch "${KDIST_ZIG_TARGET}")
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR "${kdist_zig_arch}")
# Cross builds: never pick up the build machine's libraries or headers.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# One wrapper per tool, written where this configure's build folder is (a try_compile()
# project writes its own).
set(kdist_zig_wrappers "${CMAKE_BINARY_DIR}/zig-${KDIST_ZIG_TARGET}")
foreach(tool cc c++ ar ranlib strip)
  set(KDIST_ZIG_COMMAND "${tool}")
  set(KDIST_ZIG_ARGUMENTS "")
  if(tool STREQUAL "cc" OR tool STREQUAL "c++")
    set(KDIST_ZIG_ARGUMENTS "-target ${KDIST_ZIG_TARGET}")
  endif()
  configure_file("${CMAKE_CURRENT_LIST_DIR}/zig-wrapper.sh.in" "${kdist_zig_wrappers}/${tool}"
                 @ONLY FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
                 GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endforeach()
set(CMAKE_C_COMPILER "${kdist_zig_wrappers}/cc")
set(CMAKE_CXX_COMPILER "${kdist_zig_wrappers}/c++")
set(CMAKE_AR "${kdist_zig_wrappers}/ar" CACHE FILEPATH "zig ar" FORCE)
set(CMAKE_RANLIB "${kdist_zig_wrappers}/ranlib" CACHE FILEPATH "zig ranlib" FORCE)
# nanobind links its modules with -Wl,-s already; the wrapper only keeps CMake's install
# from running the build machine's strip on another architecture's files.
set(CMAKE_STRIP "${kdist_zig_wrappers}/strip" CACHE FILEPATH "nothing: the linker strips" FORCE)
# nanobind's headers call fprintf(stderr, ...) without including <cstdio>: libstdc++'s
# headers bring it in on the way, libc++'s do not, and the limited API's Python.h (abi3)
# does not either. Included up front here rather than patched into nanobind.
set(CMAKE_CXX_FLAGS_INIT "-include cstdio")
# libc++ and the core are linked in statically: keep their symbols out of the module's
# dynamic symbol table, so they can never interpose with another library's (only
# PyInit_<module> is exported).
set(CMAKE_SHARED_MODULE_LINKER_FLAGS_INIT "-Wl,--exclude-libs,ALL")
