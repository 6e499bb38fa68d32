# CMake toolchain for the aarch64 node tarball, cross-built on an x86-64
# Debian 12 machine (deploy/node-bundle.sh --arch aarch64):
#   - compilers: Debian's cross toolchain (crossbuild-essential-arm64),
#   - libraries: the arm64 -dev packages installed beside the x86 ones through
#     dpkg multiarch (/usr/lib/aarch64-linux-gnu; deploy/install-deps.sh
#     --cross aarch64), and the ones that cannot be installed beside their
#     x86 twin (libyaml-cpp-dev) unpacked into CMAX_CROSS_EXTRA_ROOT,
#   - code generators (protoc, grpc_cpp_plugin): the x86 ones in /usr/bin.
# No CUDA: there is no aarch64 CUDA toolkit here, and nvcc for x86 would
# make x86 code; the tarball says the GPU suites are not in it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAX_ENABLE_CUDA OFF CACHE STRING "" FORCE)

# Where find_* look: the machine's own root (the multiarch arm64 libraries
# live there under their own triplet) and the unpacked extras. Programs are
# the build machine's.
set(CMAX_CROSS_EXTRA_ROOT "" CACHE PATH "Unpacked arm64 packages that multiarch cannot install")
set(CMAKE_FIND_ROOT_PATH / ${CMAX_CROSS_EXTRA_ROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config: the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# Run aarch64 programs (try_run, tests) through qemu-user.
find_program(CMAX_QEMU_AARCH64 qemu-aarch64-static)
if(CMAX_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAX_QEMU_AARCH64})
endif()
