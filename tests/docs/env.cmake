# docs.env: fails unless docs/ENV.md's first table names exactly the WEFT_*
# environment variables that the sources read. Run with
#   cmake -DSOURCE_DIR=<repo> -P docs_env.cmake
#
# A variable is any string literal that is a whole WEFT_* name ("WEFT_X") in
# a *.c, *.h or *.cu file outside tests/: getenv's argument, or a name
# handed to a helper that calls getenv. Files are found from SOURCE_DIR
# (git's tracked and new files where git is there, else every such file
# outside build folders), so files moving between folders change nothing.
cmake_minimum_required(VERSION 3.18)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "docs_env.cmake: SOURCE_DIR is not set")
endif()

set(files)
find_program(GIT git)
if(GIT AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(
    COMMAND "${GIT}" -C "${SOURCE_DIR}" ls-files --cached --others
            --exclude-standard -- "*.c" "*.h" "*.cu"
    OUTPUT_VARIABLE listed RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0)
    string(REPLACE "\n" ";" listed "${listed}")
    foreach(f IN LISTS listed)
      if(f AND EXISTS "${SOURCE_DIR}/${f}")
        list(APPEND files "${f}")
      endif()
    endforeach()
  endif()
endif()
if(NOT files)
  file(GLOB_RECURSE files RELATIVE "${SOURCE_DIR}"
       "${SOURCE_DIR}/*.c" "${SOURCE_DIR}/*.h" "${SOURCE_DIR}/*.cu")
  list(FILTER files EXCLUDE REGEX "(^|/)(build[^/]*|\\.git|CMakeFiles)/")
endif()
list(FILTER files EXCLUDE REGEX "^tests/")

set(in_code)
foreach(f IN LISTS files)
  file(STRINGS "${SOURCE_DIR}/${f}" lines REGEX "\"WEFT_[A-Z0-9_]+\"")
  foreach(line IN LISTS lines)
    string(REGEX MATCHALL "\"WEFT_[A-Z0-9_]+\"" names "${line}")
    foreach(n IN LISTS names)
      string(REPLACE "\"" "" n "${n}")
      list(APPEND in_code "${n}")
    endforeach()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES in_code)
if(NOT in_code)
  message(FATAL_ERROR "docs.env: no WEFT_* variable found in ${SOURCE_DIR}")
endif()

# The first table of docs/ENV.md: its rows start with | `WEFT_...` |.
file(STRINGS "${SOURCE_DIR}/docs/ENV.md" doc_lines)
set(in_doc)
set(state 0) # 0 before the table, 1 in it, 2 after it
foreach(line IN LISTS doc_lines)
  if(line MATCHES "^\\|")
    if(state EQUAL 0)
      set(state 1)
    endif()
    if(state EQUAL 1 AND line MATCHES "^\\| *`(WEFT_[A-Z0-9_]+)`")
      list(APPEND in_doc "${CMAKE_MATCH_1}")
    endif()
  elseif(state EQUAL 1)
    set(state 2)
  endif()
endforeach()

set(missing)
foreach(n IN LISTS in_code)
  if(NOT n IN_LIST in_doc)
    list(APPEND missing "${n}")
  endif()
endforeach()
set(extra)
foreach(n IN LISTS in_doc)
  if(NOT n IN_LIST in_code)
    list(APPEND extra "${n}")
  endif()
endforeach()
if(missing OR extra)
  string(REPLACE ";" " " missing "${missing}")
  string(REPLACE ";" " " extra "${extra}")
  message(FATAL_ERROR "docs/ENV.md's table differs from the sources:\n"
                      "  read by the code, missing from the table: ${missing}\n"
                      "  in the table, read by no source: ${extra}")
endif()
list(LENGTH in_code n)
message(STATUS "docs.env: the ${n} WEFT_* variables the sources read are in docs/ENV.md")
