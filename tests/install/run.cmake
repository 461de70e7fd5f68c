# Installs the build tree into a scratch prefix, then builds and runs a
# consumer with find_package(pot CONFIG) (shared and static) and with
# pkg-config (shared and --static).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# find_package
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${WORK_DIR}/cmake-build -G Ninja
    -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/cmake-build)
if(WITH_TORCH)
  set(replay replay)
else()
  set(replay no-torch)
endif()
run(${WORK_DIR}/cmake-build/consumer_shared ${replay})
run(${WORK_DIR}/cmake-build/consumer_static ${replay})

# pkg-config
file(GLOB_RECURSE pc_files ${prefix}/*/pot.pc)
list(GET pc_files 0 pc_file)
get_filename_component(pc_dir ${pc_file} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
execute_process(COMMAND pkg-config --cflags --libs pot OUTPUT_VARIABLE flags
                OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(cc -std=c99 -Wall -Werror ${SOURCE_DIR}/consumer.c -o ${WORK_DIR}/pc_shared ${flags})
get_filename_component(libdir ${pc_dir} DIRECTORY)
set(ENV{LD_LIBRARY_PATH} ${libdir})
run(${WORK_DIR}/pc_shared)
execute_process(COMMAND pkg-config --cflags --libs --static pot OUTPUT_VARIABLE sflags
                OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
separate_arguments(sflags UNIX_COMMAND "${sflags}")
run(cc -std=c99 -Wall -Werror ${SOURCE_DIR}/consumer.c -o ${WORK_DIR}/pc_static
    -Wl,-Bstatic -lpot -Wl,-Bdynamic ${sflags})
unset(ENV{LD_LIBRARY_PATH})
run(${WORK_DIR}/pc_static ${replay})

# The installed tool starts without LD_LIBRARY_PATH (its RPATH names the
# prefix's libdir, relative to bin/).
run(${prefix}/bin/pot --version)

if(WITH_TORCH)
  # libpot does not load LibTorch: only its replay module names it.
  file(GLOB libpot ${libdir}/libpot.so.*.*)
  execute_process(COMMAND readelf -d ${libpot} OUTPUT_VARIABLE dyn COMMAND_ERROR_IS_FATAL ANY)
  if(dyn MATCHES "NEEDED[^\n]*(torch|c10)")
    message(FATAL_ERROR "${libpot} links LibTorch:\n${dyn}")
  endif()
  # Without its module, the same libpot reports why replay is unavailable.
  file(MAKE_DIRECTORY ${WORK_DIR}/no-module)
  file(GLOB libs ${libdir}/libpot.so*)
  file(COPY ${libs} DESTINATION ${WORK_DIR}/no-module)
  set(ENV{LD_LIBRARY_PATH} ${WORK_DIR}/no-module)
  run(${WORK_DIR}/pc_shared no-replay)
  unset(ENV{LD_LIBRARY_PATH})
endif()
