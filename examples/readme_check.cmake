# Fails unless the document DOC (README.md, docs/GUIDE.md) contains every
# file of FILES verbatim, so that the program a page shows is the one CI
# compiles and runs.
file(READ "${DOC}" doc)
foreach(f IN LISTS FILES)
  file(READ "${f}" text)
  string(FIND "${doc}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${DOC} does not show ${f} as it is")
  endif()
endforeach()
