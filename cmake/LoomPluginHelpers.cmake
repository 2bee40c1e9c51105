# loom_add_plugin(<name> SOURCES <files...> [LIBRARIES <libs...>] [NO_DEFS] [TEST_ONLY])
#
# Builds libloom-<name>.so the way every plugin must be built (docs/plugins.md): a MODULE library
# with hidden visibility, only `loom_plugin_query` exported, static dependencies kept private
# (--exclude-libs,ALL) and no undefined symbols left for load time (-z defs). NO_DEFS drops -z defs
# (only for the loader's own failure fixtures); TEST_ONLY puts the library under the test plugin
# directory instead of the plugin directory. The target is `loom_plugin_<name>`.
# Only the entry point is global; everything else (including weak template statics that
# libstdc++ headers give default visibility) stays local to the plugin.
set(LOOM_PLUGIN_VERSION_SCRIPT ${CMAKE_BINARY_DIR}/loom-plugin.map)
file(WRITE ${LOOM_PLUGIN_VERSION_SCRIPT} "{\n  global: loom_plugin_query;\n  local: *;\n};\n")

function(loom_add_plugin name)
  cmake_parse_arguments(ARG "NO_DEFS;TEST_ONLY" "OUTPUT_DIR" "SOURCES;LIBRARIES" ${ARGN})
  set(target loom_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "loom-${name}"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIR})
  elseif(ARG_TEST_ONLY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib/loom/test-plugins)
  else()
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${LOOM_PLUGIN_OUTPUT_DIR})
  endif()
  target_link_libraries(${target} PRIVATE loom::sdk ${ARG_LIBRARIES})
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
  endif()
endfunction()
