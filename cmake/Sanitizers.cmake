#===- Sanitizers.cmake - Sanitizer and fuzzer builds of the project -------===#
#
# MOE_SANITIZERS (for example "address;undefined") builds every file of the
# project, and links every program, with those sanitizers; MLIR and LLVM
# stay Debian's uninstrumented libraries. MOE_ENABLE_FUZZERS adds libFuzzer's
# coverage instrumentation (-fsanitize=fuzzer-no-link) to the project's code
# and builds the fuzz targets of fuzz/. Both need clang (clang-22 from
# Debian); scripts/sanitize.sh configures such a build. MOE_HOST_LINK_FLAGS
# holds the flags that moe-compile must link its executables with, since
# their driver and run-time libraries are then instrumented too.
#
#===----------------------------------------------------------------------===#

set(MOE_SANITIZERS "" CACHE STRING
  "Sanitizers for the project's code, ';'-separated (address, undefined); clang only")
option(MOE_ENABLE_FUZZERS "Build the libFuzzer targets of fuzz/ (clang only)" OFF)

set(MOE_HOST_LINK_FLAGS "")
if(MOE_SANITIZERS OR MOE_ENABLE_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "MOE_SANITIZERS and MOE_ENABLE_FUZZERS need clang "
      "(configure with -DCMAKE_CXX_COMPILER=clang++-22 "
      "-DCMAKE_C_COMPILER=clang-22; scripts/sanitize.sh does)")
  endif()
endif()

if(MOE_SANITIZERS)
  list(JOIN MOE_SANITIZERS "," moe_sanitizer_list)
  set(moe_sanitizer_flags -fsanitize=${moe_sanitizer_list}
    -fno-sanitize-recover=all -fno-omit-frame-pointer)
  if("undefined" IN_LIST MOE_SANITIZERS)
    # The vptr check needs RTTI, which LLVM-style code is built without.
    list(APPEND moe_sanitizer_flags -fno-sanitize=vptr)
  endif()
  # Shared libraries leave the sanitizers' symbols to the executable's
  # runtime: HandleLLVMOptions' -Wl,-z,defs would reject them.
  foreach(var CMAKE_SHARED_LINKER_FLAGS CMAKE_MODULE_LINKER_FLAGS)
    string(REPLACE "-Wl,-z,defs" "" ${var} "${${var}}")
  endforeach()
  add_compile_options(${moe_sanitizer_flags})
  add_link_options(${moe_sanitizer_flags})
  list(APPEND MOE_HOST_LINK_FLAGS ${moe_sanitizer_flags})
  message(STATUS "moe-mlir: sanitizers ${moe_sanitizer_list}")
endif()

if(MOE_ENABLE_FUZZERS)
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "moe-mlir: fuzz targets enabled")
endif()
