# loom_add_plugin(<name> SOURCES <files...> [LIBRARIES <libs...>] [OUTPUT_DIR <dir>] [NO_DEFS] [TEST_ONLY])
#
# The one definition of how a Loom plugin is built, shared by the first-party plugins in the
# source tree and by plugins built against an installed SDK (find_package(LoomSDK) includes this
# file). It builds libloom-<name>.so as a MODULE library with hidden visibility, only
# `loom_plugin_query` exported (a version script), static dependencies kept private
# (--exclude-libs,ALL), no STB_GNU_UNIQUE symbols (-fno-gnu-unique) and no undefined symbol left
# for load time (-z defs). The target is `loom_plugin_<name>`.
#
#   LIBRARIES   linked privately
#   OUTPUT_DIR  where the .so is written (default: ${LOOM_PLUGIN_OUTPUT_DIR}, else
#               <build>/lib/loom/plugins, a directory to give `loom --plugin-path`)
#   NO_DEFS     drops -z defs (only for the loader's own failure fixtures)
#   TEST_ONLY   writes the .so under <build>/lib/loom/test-plugins and does not install it
#
# Plugins that are neither TEST_ONLY nor given an OUTPUT_DIR are installed into
# ${LOOM_PLUGIN_INSTALL_DIR} (default lib/loom/plugins: where an installed `loom` looks, relative
# to its own bin/) and listed in the global property LOOM_PLUGIN_TARGETS.
include_guard(GLOBAL)

# Only the entry point is global; everything else (including weak template statics that
# libstdc++ headers give default visibility) stays local to the plugin.
set(LOOM_PLUGIN_VERSION_SCRIPT ${CMAKE_BINARY_DIR}/loom-plugin.map)
file(WRITE ${LOOM_PLUGIN_VERSION_SCRIPT} "{\n  global: loom_plugin_query;\n  local: *;\n};\n")
if(NOT DEFINED LOOM_PLUGIN_INSTALL_DIR)
  set(LOOM_PLUGIN_INSTALL_DIR lib/loom/plugins)
endif()

function(loom_add_plugin name)
  cmake_parse_arguments(ARG "NO_DEFS;TEST_ONLY" "OUTPUT_DIR" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "loom_add_plugin(${name}): no SOURCES given")
  endif()
  set(target loom_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "loom-${name}"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIR)
    set(output_dir ${ARG_OUTPUT_DIR})
  elseif(ARG_TEST_ONLY)
    set(output_dir ${CMAKE_BINARY_DIR}/lib/loom/test-plugins)
  elseif(DEFINED LOOM_PLUGIN_OUTPUT_DIR)
    set(output_dir ${LOOM_PLUGIN_OUTPUT_DIR})
  else()
    set(output_dir ${CMAKE_BINARY_DIR}/lib/loom/plugins)
  endif()
  set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${output_dir})
  target_link_libraries(${target} PRIVATE Loom::sdk ${ARG_LIBRARIES})
  # Loom's own tree adds its warning and CPU-target flags; an out-of-tree plugin chooses its own.
  if(TARGET loom_warnings)
    target_link_libraries(${target} PRIVATE loom_warnings loom_cpu_target)
  endif()
  # STB_GNU_UNIQUE symbols (e.g. from libstdc++'s std::to_string) would pin the plugin in memory.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -fno-gnu-unique)
  endif()
  target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL -Wl,--version-script=${LOOM_PLUGIN_VERSION_SCRIPT})
  # Sanitizer runtimes live in the executable, so -z defs cannot hold under them.
  if(NOT ARG_NO_DEFS AND NOT LOOM_SANITIZE)
    target_link_options(${target} PRIVATE -Wl,-z,defs)
  endif()
  if(NOT ARG_TEST_ONLY AND NOT ARG_OUTPUT_DIR)
    set_property(GLOBAL APPEND PROPERTY LOOM_PLUGIN_TARGETS ${target})
    install(TARGETS ${target} LIBRARY DESTINATION ${LOOM_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
