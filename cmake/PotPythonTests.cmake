# Tests that need Python modules beyond the standard library: the interop
# tests (pytest, numpy and safetensors, the last from PyPI, in POT_PYTHON)
# and, with LibTorch, the PyTorch replay tests (torch and pytest in Debian's
# /usr/bin/python3). POT_INTEROP_TESTS decides what happens when a module is
# missing:
#   AUTO (default)  the tests are registered but disabled, with a warning
#                   naming the missing modules: a plain
#                   `cmake -S . -B build && ctest --test-dir build` passes and
#                   ctest lists them as "Not Run (Disabled)".
#   ON              configuring fails, naming them (scripts/test passes ON, so
#                   the README's test command always runs every test).
#   OFF             the tests are not registered.
set(POT_INTEROP_TESTS AUTO CACHE STRING "Tests needing extra Python modules: AUTO (skip when missing), ON (required), OFF")
set_property(CACHE POT_INTEROP_TESTS PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${POT_INTEROP_TESTS}" _pot_interop)
if(_pot_interop MATCHES "^(ON|TRUE|YES|Y|1)$")
  set(_pot_interop ON)
elseif(_pot_interop MATCHES "^(OFF|FALSE|NO|N|0)$")
  set(_pot_interop OFF)
elseif(NOT _pot_interop STREQUAL "AUTO")
  message(FATAL_ERROR "POT_INTEROP_TESTS=${POT_INTEROP_TESTS}: want AUTO, ON or OFF")
endif()

# pot_python_tests(OUT GROUP PYTHON HINT MODULE...): sets OUT to REGISTER
# (run them), DISABLED (register them disabled) or NONE (do not register).
# An empty PYTHON counts as lacking every module.
function(pot_python_tests out group python hint)
  if(_pot_interop STREQUAL "OFF")
    set(${out} NONE PARENT_SCOPE)
    return()
  endif()
  string(REPLACE ";" ", " _mods "${ARGN}")
  set(_rc 1)
  if(python)
    execute_process(COMMAND ${python} -c "import ${_mods}" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  endif()
  if(_rc EQUAL 0)
    set(${out} REGISTER PARENT_SCOPE)
    return()
  endif()
  set(_why "the ${group} tests need ${_mods} in the Python '${python}', which lacks one of them (${hint})")
  if(_pot_interop STREQUAL "ON")
    message(FATAL_ERROR "POT_INTEROP_TESTS=ON: ${_why}")
  endif()
  message(WARNING "pot: ${_why}: the ${group} tests are registered disabled; scripts/test runs them, "
                  "-DPOT_INTEROP_TESTS=OFF leaves them out")
  set(${out} DISABLED PARENT_SCOPE)
endfunction()

# pot_python_tests_apply(STATE TEST...): marks the tests disabled when STATE is DISABLED.
function(pot_python_tests_apply state)
  if(state STREQUAL "DISABLED")
    set_tests_properties(${ARGN} PROPERTIES DISABLED TRUE)
  endif()
endfunction()
