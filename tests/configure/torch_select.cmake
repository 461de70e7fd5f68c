# POT_TORCH (cmake/PotTorch.cmake) refuses what is not a torch wheel's
# Python, naming why, and a mixed LibTorch (a wheel's headers with the
# system's libraries), naming the library.
# Usage: cmake -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#              -DDEBIAN_PYTHON=<Debian's python3, torch without CMake files> [-DWHEEL_PYTHON=<a torch wheel's Python>]
#              -P torch_select.cmake
file(REMOVE_RECURSE ${WORK_DIR})
# A Python without torch: Debian's, without its site packages.
file(WRITE ${WORK_DIR}/no-torch-python "#!/bin/sh\nexec ${DEBIAN_PYTHON} -S \"$@\"\n")
file(CHMOD ${WORK_DIR}/no-torch-python PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)

function(configure name out_rc out_text)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/${name} -G ${GENERATOR}
                          -DPOT_BUILD_BENCH=OFF -DPOT_INTEROP_TESTS=OFF ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${out_rc} ${rc} PARENT_SCOPE)
  string(REGEX REPLACE "[ \n]+" " " text "${out}${err}")  # CMake wraps its messages
  set(${out_text} "${text}" PARENT_SCOPE)
endfunction()

function(expect_refusal name want)
  configure(${name} rc text ${ARGN})
  if(rc EQUAL 0 OR NOT text MATCHES "${want}")
    message(FATAL_ERROR "${name}: want a configure error matching '${want}', got rc ${rc}:\n${text}")
  endif()
  message(STATUS "${name}: refused: ${want}")
endfunction()

expect_refusal(not-a-python "POT_TORCH=/nonexistent/python: not a Python interpreter" -DPOT_TORCH=/nonexistent/python)
expect_refusal(a-directory "not a Python interpreter" -DPOT_TORCH=${WORK_DIR})
expect_refusal(no-torch "that Python has no torch installed" -DPOT_TORCH=${WORK_DIR}/no-torch-python)
expect_refusal(not-a-wheel "holds no LibTorch CMake files" -DPOT_TORCH=${DEBIAN_PYTHON})

if(WHEEL_PYTHON)
  execute_process(COMMAND ${WHEEL_PYTHON} -c
                    "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])"
                  OUTPUT_VARIABLE torch_dir OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  # The wheel's TorchConfig.cmake found through Torch_DIR on a machine with
  # Debian's libtorch-dev: its searches pick the system's libraries.
  expect_refusal(mixed "pot: mixed LibTorch: the headers are those of '${torch_dir}', but '/usr/lib/[^']*lib(c10|torch)[^']*' comes from another installation"
                 -DTorch_DIR=${torch_dir}/share/cmake/Torch)
  # The wheel itself configures, twice in one directory; then the same
  # directory goes back to the system's LibTorch, and to the wheel again
  # (each switch forgets the other's cached paths).
  foreach(i 1 2)
    configure(wheel rc text -DPOT_TORCH=${WHEEL_PYTHON})
    if(NOT rc EQUAL 0 OR NOT text MATCHES "pot: LibTorch [0-9.]+ from ${torch_dir}")
      message(FATAL_ERROR "wheel (${i}): want it configured, got rc ${rc}:\n${text}")
    endif()
    configure(wheel rc text -DPOT_TORCH=)
    if(NOT rc EQUAL 0 OR NOT text MATCHES "pot: LibTorch [0-9.]+ from /usr")
      message(FATAL_ERROR "back to the system's LibTorch (${i}): want it configured, got rc ${rc}:\n${text}")
    endif()
  endforeach()
  message(STATUS "a wheel, the system's LibTorch, the wheel again: configured in one directory")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
