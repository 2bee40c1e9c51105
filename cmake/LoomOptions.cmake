# Compiler flags for Loom's own code: warnings as errors, CPU target, sanitizers.
add_library(loom_warnings INTERFACE)
target_compile_options(loom_warnings INTERFACE -Wall -Wextra -Werror)

add_library(loom_cpu_target INTERFACE)
if(LOOM_NATIVE)
  target_compile_options(loom_cpu_target INTERFACE -march=native)
else()
  # Any x86-64-v3 machine (AVX2/FMA) runs the build; AVX-512 is opt-in via LOOM_NATIVE.
  target_compile_options(loom_cpu_target INTERFACE -march=x86-64-v3)
endif()

if(LOOM_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
