# Build options shared by every taot target.
include_guard(GLOBAL)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

option(TAOT_BUILD_TESTS "Build tests and benchmarks" ON)
option(TAOT_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

if(TAOT_SANITIZE)
  # libstdc++'s assertions catch an index past a vector's size that is still inside its
  # capacity, which AddressSanitizer cannot see.
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
                      -D_GLIBCXX_ASSERTIONS)
  add_link_options(-fsanitize=address,undefined)
endif()

option(TAOT_FUZZ "Build the libFuzzer targets (tests/fuzz; clang only): every target instrumented" OFF)
if(TAOT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TAOT_FUZZ needs clang (libFuzzer): configure with CC=clang CXX=clang++")
  endif()
  # fuzzer-no-link: coverage feedback from all of our code; only the fuzz targets link libFuzzer's
  # main. Undefined behaviour aborts, so that the fuzzer reports it as a finding.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# Warnings as errors for our own code only: call taot_strict(target) on each target we own.
function(taot_strict target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Werror>)
endfunction()

# Planners must be bit-for-bit deterministic across CPUs: a fused multiply-add on one machine
# must not break a tie differently than a separate multiply and add on another.
function(taot_deterministic_fp target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>)
endfunction()
