# ortops_generate_cann_soc_table(<output .inc>): writes the C++ form of ort_ops/cann_soc_table.json
# (`python ort_ops/cann_soc.py --cpp`, stdlib only), rewritten only when its text changes; CMake
# re-runs when the table or the generator changes.
get_filename_component(_ortops_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
function(ortops_generate_cann_soc_table output)
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  set(_table "${_ortops_root}/ort_ops/cann_soc_table.json")
  set(_generator "${_ortops_root}/ort_ops/cann_soc.py")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_table}" "${_generator}")
  execute_process(COMMAND "${Python3_EXECUTABLE}" "${_generator}" --cpp
                  OUTPUT_VARIABLE _text ERROR_VARIABLE _error RESULT_VARIABLE _result)
  if(NOT _result EQUAL 0)
    message(FATAL_ERROR "ort_ops/cann_soc.py --cpp failed (${_result}): ${_error}")
  endif()
  set(_old "")
  if(EXISTS "${output}")
    file(READ "${output}" _old)
  endif()
  if(NOT _old STREQUAL _text)
    file(WRITE "${output}" "${_text}")
  endif()
endfunction()
