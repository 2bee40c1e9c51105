# CPack pre-build step of the .tar.gz (generator_settings.cmake): makes the staged tree
# self-contained with bundle-libraries.sh before it is archived.
file(GLOB_RECURSE _loom_staged_exe LIST_DIRECTORIES false "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/bin/loom"
     "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/bin/loom")
list(LENGTH _loom_staged_exe _count)
if(NOT _count EQUAL 1)
  message(FATAL_ERROR "bundle_libraries: expected one staged bin/loom under ${CPACK_TEMPORARY_INSTALL_DIRECTORY}, "
                      "found ${_count}: ${_loom_staged_exe}")
endif()
get_filename_component(_loom_root "${_loom_staged_exe}" DIRECTORY)
get_filename_component(_loom_root "${_loom_root}" DIRECTORY)
execute_process(COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/bundle-libraries.sh "${_loom_root}"
                RESULT_VARIABLE _result)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "bundle_libraries: bundle-libraries.sh ${_loom_root} failed (${_result})")
endif()
