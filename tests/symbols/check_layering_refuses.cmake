cmake_minimum_required(VERSION 3.22)
# cmake -DSRC=<src dir> -DWORK=<scratch dir> -P check_layering_refuses.cmake
# The attack on the floors: a copy of src/ with one arrow running back up
# (hash/ including game/), LibTorch included by the spec and a folder that is
# no layer. The check (cmake/PotLayering.cmake) must refuse each, naming the
# file and the rule; the untouched copy must pass, so a refusal is the edit's.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/PotLayering.cmake)
file(REMOVE_RECURSE ${WORK})
file(COPY ${SRC}/ DESTINATION ${WORK})

pot_check_layering(${WORK} bad)
if(bad)
  message(FATAL_ERROR "the untouched copy of src/ is refused already: ${bad}")
endif()

file(GLOB hash_sources ${WORK}/hash/*.cpp)
list(GET hash_sources 0 victim)
file(RELATIVE_PATH victim_rel ${WORK} ${victim})
file(APPEND ${victim} "\n#include \"game/ledger.h\"\n")
file(APPEND ${WORK}/spec/spec.cpp "\n#include <torch/torch.h>\n")
file(MAKE_DIRECTORY ${WORK}/misc)

pot_check_layering(${WORK} bad)
set(expected
  "src/${victim_rel}: includes game/, a layer that hash may not use"
  "src/spec/spec.cpp: includes a LibTorch header (torch/), allowed only in repro_aten, replay"
  "src/misc: a folder that is no layer")
foreach(e IN LISTS expected)
  string(FIND "${bad}" "${e}" at)
  if(at EQUAL -1)
    list(JOIN bad "\n  " text)
    message(FATAL_ERROR "the check did not refuse: ${e}\nit said:\n  ${text}")
  endif()
  message(STATUS "refused as it should be: ${e}")
endforeach()
file(REMOVE_RECURSE ${WORK})
