# Finds the LibTorch the replay layer (src/replay) builds against.
#
#   POT_TORCH empty (default)  find_package(Torch): Debian's libtorch-dev, or a
#                              LibTorch found through CMAKE_PREFIX_PATH/Torch_DIR.
#   POT_TORCH=<python>         the LibTorch inside the torch wheel installed in
#                              that Python (e.g. a venv with torch 2.x from PyPI).
#
# Either way the result is checked: every LibTorch library must come from the
# installation the headers come from (a mixed LibTorch builds, then crashes at
# start-up or computes with another build's kernels).
#
# Defines: POT_TORCH_TARGETS (what the replay layer links), POT_TORCH_PREFIX
# (the installation), POT_TORCH_PYTHON (the interpreter whose torch it is:
# the one the replay tests train with), POT_TORCH_LIBDIR (set for a wheel:
# the directory libpot's RUNPATH names), POT_TORCH_SHIM_INCLUDE (set for a
# wheel: see below).
#
# This file is also installed next to potConfig.cmake, which sets
# POT_TORCH_CONSUMER and POT_TORCH (the build's value) and includes it to
# find the same LibTorch for users of pot::pot_static.

# A wheel: ask its Python where the torch package is, without importing it
# (an import loads every CUDA library the wheel ships).
function(_pot_torch_package_dir python out)
  execute_process(
    COMMAND "${python}" -c
      "import importlib.util as u; s = u.find_spec('torch'); print(s.submodule_search_locations[0] if s else '')"
    OUTPUT_VARIABLE _dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "POT_TORCH=${python}: cannot run it as Python: ${_err}")
  endif()
  if(_dir STREQUAL "")
    message(FATAL_ERROR "POT_TORCH=${python}: that Python has no torch installed (pip install torch)")
  endif()
  if(NOT EXISTS "${_dir}/share/cmake/Torch/TorchConfig.cmake")
    message(FATAL_ERROR "POT_TORCH=${python}: its torch package '${_dir}' holds no LibTorch CMake files "
                        "(share/cmake/Torch/TorchConfig.cmake): not a torch wheel?")
  endif()
  set(${out} "${_dir}" PARENT_SCOPE)
endfunction()

# Every library file a list of targets and paths links, resolved.
function(_pot_torch_link_files out)
  set(_files)
  set(_todo ${ARGN})
  set(_seen)
  while(_todo)
    list(POP_FRONT _todo _item)
    if(_item IN_LIST _seen)
      continue()
    endif()
    list(APPEND _seen "${_item}")
    if(TARGET "${_item}")
      get_target_property(_type "${_item}" TYPE)
      if(NOT _type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(_imported "${_item}" IMPORTED)
        if(_imported)
          get_target_property(_loc "${_item}" IMPORTED_LOCATION)
          if(NOT _loc)
            get_target_property(_loc "${_item}" IMPORTED_LOCATION_RELEASE)
          endif()
          if(_loc)
            list(APPEND _files "${_loc}")
          endif()
        endif()
      endif()
      get_target_property(_deps "${_item}" INTERFACE_LINK_LIBRARIES)
      if(_deps)
        foreach(_d IN LISTS _deps)
          # $<TARGET_FILE:x> and $<TARGET_PROPERTY:x,...> name targets, also
          # inside linker flags (-Wl,--no-as-needed,"$<TARGET_FILE:torch_cpu>").
          string(REGEX MATCHALL "\\$<TARGET_(FILE|PROPERTY):[^,>]+" _refs "${_d}")
          foreach(_r IN LISTS _refs)
            string(REGEX REPLACE "^\\$<TARGET_(FILE|PROPERTY):" "" _r "${_r}")
            list(APPEND _todo "${_r}")
          endforeach()
          if(NOT _d MATCHES "[$<]" AND NOT _d MATCHES "^-")
            list(APPEND _todo "${_d}")
          endif()
        endforeach()
      endif()
    elseif(IS_ABSOLUTE "${_item}" AND _item MATCHES "/lib(c10|torch)[^/]*\\.(so|a)")
      list(APPEND _files "${_item}")
    endif()
  endwhile()
  set(${out} ${_files} PARENT_SCOPE)
endfunction()

# out = TRUE when `path` lies under the directory `dir` (a plain prefix
# test: paths may hold regex characters such as '+').
function(_pot_under path dir out)
  string(LENGTH "${dir}/" _n)
  string(SUBSTRING "${path}" 0 ${_n} _head)
  if(_head STREQUAL "${dir}/")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

macro(pot_find_torch)
  set(POT_TORCH "${POT_TORCH}" CACHE STRING
      "LibTorch of the replay layer: empty (find_package(Torch), e.g. Debian's libtorch-dev) or a Python interpreter whose installed torch wheel provides it")
  set(POT_TORCH_LIBDIR "")
  set(POT_TORCH_SHIM_INCLUDE "")
  if(POT_TORCH STREQUAL "")
    # A directory configured with a wheel before: forget the paths that
    # pointed into it, or find_package would find the wheel again.
    foreach(_pot_var IN LISTS _POT_TORCH_WHEEL_CACHE)
      unset(${_pot_var} CACHE)
    endforeach()
    unset(_POT_TORCH_WHEEL_CACHE CACHE)
    find_package(Torch REQUIRED)
    set(POT_TORCH_TARGETS torch)
    # (Looked up again: a directory configured with a wheel before keeps
    # that wheel's Python in the cache.)
    unset(POT_TORCH_PYTHON CACHE)
    find_program(POT_TORCH_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
  else()
    if(NOT EXISTS "${POT_TORCH}" OR IS_DIRECTORY "${POT_TORCH}")
      message(FATAL_ERROR "POT_TORCH=${POT_TORCH}: not a Python interpreter (give e.g. venv/bin/python, whose "
                          "installed torch wheel provides LibTorch)")
    endif()
    set(POT_TORCH_PYTHON "${POT_TORCH}" CACHE INTERNAL "The Python whose torch is the LibTorch built against" FORCE)
    _pot_torch_package_dir("${POT_TORCH}" _pot_torch_dir)
    # The replay runs on the CPU: it links libtorch_cpu, never libtorch_cuda.
    # A CUDA wheel's Caffe2Config.cmake looks for a CUDA toolkit (and fails
    # without one) unless torch::cudart exists; it stands in, linking nothing.
    if(NOT TARGET torch::cudart)
      add_library(torch::cudart INTERFACE IMPORTED)
    endif()
    # The wheel's libtorch_cpu.so holds MKL linked in; without an MKL
    # installation, Caffe2's mkl.cmake would add link directories under
    # /lib/intel64 and the like to every program that links pot.
    if(NOT TARGET caffe2::mkl)
      add_library(caffe2::mkl INTERFACE IMPORTED)
    endif()
    # The wheel's own libraries, not those of a LibTorch in the system's
    # library directories (TorchConfig.cmake searches those first).
    # (Forced: a build directory reconfigured for another wheel must not
    # keep the first one's.)
    foreach(_pot_lib c10 torch torch_cpu)
      set(${_pot_lib}_LIBRARY "${_pot_torch_dir}/lib/lib${_pot_lib}.so" CACHE FILEPATH "" FORCE)
    endforeach()
    set(TORCH_LIBRARY "${_pot_torch_dir}/lib/libtorch.so" CACHE FILEPATH "" FORCE)
    # What TorchConfig.cmake finds for a CUDA wheel (pot links neither).
    foreach(_pot_pair C10_CUDA_LIBRARY:c10_cuda CAFFE2_NVRTC_LIBRARY:caffe2_nvrtc)
      string(REPLACE ":" ";" _pot_pair "${_pot_pair}")
      list(GET _pot_pair 0 _pot_var)
      list(GET _pot_pair 1 _pot_lib)
      unset(${_pot_var} CACHE)
      if(EXISTS "${_pot_torch_dir}/lib/lib${_pot_lib}.so")
        set(${_pot_var} "${_pot_torch_dir}/lib/lib${_pot_lib}.so" CACHE FILEPATH "" FORCE)
      endif()
    endforeach()
    set(Torch_DIR "${_pot_torch_dir}/share/cmake/Torch" CACHE PATH "" FORCE)
    set(Caffe2_DIR "${_pot_torch_dir}/share/cmake/Caffe2" CACHE PATH "" FORCE)
    set(_POT_TORCH_WHEEL_CACHE c10_LIBRARY torch_LIBRARY torch_cpu_LIBRARY TORCH_LIBRARY C10_CUDA_LIBRARY
        CAFFE2_NVRTC_LIBRARY Torch_DIR Caffe2_DIR kineto_LIBRARY CACHE INTERNAL "cache entries POT_TORCH set")
    find_package(Torch REQUIRED CONFIG PATHS "${_pot_torch_dir}/share/cmake/Torch" NO_DEFAULT_PATH)
    set(POT_TORCH_TARGETS torch_cpu_library)
    set(POT_TORCH_LIBDIR "${_pot_torch_dir}/lib")
    # The wheel bundles its own fmt and protobuf headers in the include
    # directory LibTorch's targets add; pot's code uses the system's (the
    # libraries it links). This directory, searched first, holds only those.
    # (Not for a consumer of the installed pot: it compiles none of pot's code.)
    set(POT_TORCH_SHIM_INCLUDE "${CMAKE_BINARY_DIR}/torch-shim-include")
    set(_pot_shim_headers fmt/format.h google/protobuf/message_lite.h)
    if(POT_TORCH_CONSUMER)
      set(POT_TORCH_SHIM_INCLUDE "")
      set(_pot_shim_headers)
    else()
      file(MAKE_DIRECTORY "${POT_TORCH_SHIM_INCLUDE}")
    endif()
    foreach(_pot_hdr IN LISTS _pot_shim_headers)
      get_filename_component(_pot_top "${_pot_hdr}" DIRECTORY)
      string(REGEX REPLACE "/.*" "" _pot_top "${_pot_top}")
      find_path(_pot_hdr_dir "${_pot_hdr}" NO_CACHE NO_CMAKE_PATH NO_CMAKE_ENVIRONMENT_PATH)
      set(_pot_in_wheel FALSE)
      if(_pot_hdr_dir)
        _pot_under("${_pot_hdr_dir}" "${_pot_torch_dir}" _pot_in_wheel)
      endif()
      if(NOT _pot_hdr_dir OR _pot_in_wheel)
        message(FATAL_ERROR "POT_TORCH=${POT_TORCH}: no system copy of <${_pot_hdr}> (scripts/deps installs it)")
      endif()
      file(CREATE_LINK "${_pot_hdr_dir}/${_pot_top}" "${POT_TORCH_SHIM_INCLUDE}/${_pot_top}" SYMBOLIC)
      unset(_pot_hdr_dir)
    endforeach()
  endif()

  # One LibTorch: the headers' installation must hold every library linked.
  get_filename_component(POT_TORCH_PREFIX "${TORCH_INSTALL_PREFIX}" REALPATH)
  _pot_torch_link_files(_pot_torch_files ${POT_TORCH_TARGETS} ${TORCH_LIBRARIES})
  foreach(_pot_f IN LISTS _pot_torch_files)
    get_filename_component(_pot_real "${_pot_f}" REALPATH)
    get_filename_component(_pot_name "${_pot_f}" NAME)
    _pot_under("${_pot_real}" "${POT_TORCH_PREFIX}" _pot_ok)
    if(_pot_name MATCHES "^lib(c10|torch)" AND NOT _pot_ok)
      message(FATAL_ERROR
        "pot: mixed LibTorch: the headers are those of '${POT_TORCH_PREFIX}', but '${_pot_f}' comes from another "
        "installation. Point Torch_DIR/CMAKE_PREFIX_PATH at one LibTorch, or give -DPOT_TORCH=<python> for a torch "
        "wheel (docs/building.md).")
    endif()
  endforeach()
  message(STATUS "pot: LibTorch ${Torch_VERSION} from ${POT_TORCH_PREFIX}")
endmacro()
