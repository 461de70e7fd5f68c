# Extracts the C example between <!-- readme-example:begin --> and
# <!-- readme-example:end --> in README.md, compiles it as C99 against the
# built libpot and runs it.
file(READ ${README} text)
string(FIND "${text}" "<!-- readme-example:begin -->" b)
string(FIND "${text}" "<!-- readme-example:end -->" e)
if(b EQUAL -1 OR e EQUAL -1)
  message(FATAL_ERROR "README.md has no readme-example markers")
endif()
math(EXPR len "${e} - ${b}")
string(SUBSTRING "${text}" ${b} ${len} block)
string(REGEX REPLACE ".*```c\n" "" block "${block}")
string(REGEX REPLACE "```.*" "" block "${block}")
file(MAKE_DIRECTORY ${WORK_DIR})
file(WRITE ${WORK_DIR}/example.c "${block}")
get_filename_component(libdir ${LIB} DIRECTORY)
execute_process(COMMAND ${CC} -std=c99 -Wall -Wextra -pedantic -Werror -I${INCLUDE}
                ${WORK_DIR}/example.c -o ${WORK_DIR}/example -L${libdir} -lpot -Wl,-rpath,${libdir}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "README example does not compile:\n${err}")
endif()
execute_process(COMMAND ${WORK_DIR}/example WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "README example failed (${rc}):\n${out}\n${err}")
endif()
message(STATUS "${out}")
