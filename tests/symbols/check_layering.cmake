cmake_minimum_required(VERSION 3.22)
# cmake -DSRC=<src dir> -P check_layering.cmake: fails naming every include
# that breaks the floors of src/layers.cmake (cmake/PotLayering.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/PotLayering.cmake)
pot_require_layering(${SRC})
message(STATUS "layering: every include of ${SRC} stands on a layer below")
