# POT_INTEROP_TESTS (cmake/PotPythonTests.cmake) on a Python that lacks the
# modules: AUTO configures with a warning naming them and registers the
# tests disabled, ON refuses to configure naming them, OFF leaves them out.
# The fake interpreter is /bin/false: every `import` check fails.
# Usage: cmake -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -P python_tests.cmake
file(REMOVE_RECURSE ${WORK_DIR})

function(configure mode out_rc out_text)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/${mode} -G ${GENERATOR}
                          -DPOT_WITH_TORCH=OFF -DPOT_BUILD_BENCH=OFF -DPOT_PYTHON=/bin/false
                          -DPOT_INTEROP_TESTS=${mode}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${out_rc} ${rc} PARENT_SCOPE)
  set(${out_text} "${out}${err}" PARENT_SCOPE)
endfunction()

# The registered python.* tests of a configured tree, and whether each is disabled.
function(python_tests dir out)
  execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${dir} --show-only=json-v1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE json)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ctest --show-only failed in ${dir}")
  endif()
  string(JSON n LENGTH "${json}" tests)
  set(found "")
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${json}" tests ${i} name)
    if(name MATCHES "^python\\.")
      set(disabled FALSE)
      string(JSON np ERROR_VARIABLE no_props LENGTH "${json}" tests ${i} properties)
      if(NOT no_props)
        math(EXPR plast "${np} - 1")
        foreach(j RANGE ${plast})
          string(JSON pname GET "${json}" tests ${i} properties ${j} name)
          if(pname STREQUAL "DISABLED")
            string(JSON disabled GET "${json}" tests ${i} properties ${j} value)
          endif()
        endforeach()
      endif()
      list(APPEND found "${name}=${disabled}")
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

configure(AUTO rc text)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "AUTO: configure failed:\n${text}")
endif()
if(NOT text MATCHES "the interop tests need pytest, numpy, safetensors")
  message(FATAL_ERROR "AUTO: no warning naming the missing modules:\n${text}")
endif()
python_tests(${WORK_DIR}/AUTO found)
if(NOT found STREQUAL "python.vectors=ON;python.safetensors_interop=ON;python.cli=ON")
  message(FATAL_ERROR "AUTO: want the three interop tests registered disabled, got '${found}'")
endif()

configure(ON rc text)
if(rc EQUAL 0 OR NOT text MATCHES "POT_INTEROP_TESTS=ON: the interop tests need pytest, numpy, safetensors")
  message(FATAL_ERROR "ON: want a configure error naming the modules, got rc ${rc}:\n${text}")
endif()

configure(OFF rc text)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "OFF: configure failed:\n${text}")
endif()
python_tests(${WORK_DIR}/OFF found)
if(found)
  message(FATAL_ERROR "OFF: want no interop tests, got '${found}'")
endif()

configure(SOMETIMES rc text)
if(rc EQUAL 0 OR NOT text MATCHES "want AUTO, ON or OFF")
  message(FATAL_ERROR "SOMETIMES: want a configure error, got rc ${rc}:\n${text}")
endif()
message(STATUS "POT_INTEROP_TESTS: AUTO disables with a warning, ON refuses, OFF leaves out, others refused")
file(REMOVE_RECURSE ${WORK_DIR})
