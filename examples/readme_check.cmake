# Fails unless README contains every file of FILES verbatim, so that the
# program the README shows is the one CI compiles and runs.
file(READ "${README}" readme)
foreach(f IN LISTS FILES)
  file(READ "${f}" text)
  string(FIND "${readme}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "README.md does not show ${f} as it is")
  endif()
endforeach()
