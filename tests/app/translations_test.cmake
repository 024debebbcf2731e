# Every user-visible string of the current sources has a German and a Chinese translation:
# lupdate refreshes copies of the committed .ts files from the sources; any entry it marks
# unfinished (new, changed or untranslated) fails the test.
file(GLOB_RECURSE sources "${SOURCE_DIR}/app/desktop/*.h" "${SOURCE_DIR}/app/desktop/*.cpp"
     "${SOURCE_DIR}/ui/*.qml")
foreach(lang de zh_CN)
  set(copy "${WORK}/hearth_${lang}.ts")
  configure_file("${SOURCE_DIR}/translations/hearth_${lang}.ts" "${copy}" COPYONLY)
  execute_process(COMMAND "${LUPDATE}" -silent -no-obsolete -locations none -I "${SOURCE_DIR}" ${sources}
                          -ts "${copy}"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "lupdate failed (${rc})")
  endif()
  file(READ "${copy}" ts)
  string(REGEX MATCHALL "<source>[^<]*</source>[ \n\r\t]*(<comment>[^<]*</comment>[ \n\r\t]*)?<translation type=\"unfinished\"" open "${ts}")
  list(LENGTH open count)
  if(count GREATER 0)
    message(FATAL_ERROR "${count} untranslated strings in hearth_${lang}.ts:\n${open}")
  endif()
  string(REGEX MATCHALL "<message" all "${ts}")
  list(LENGTH all total)
  message("hearth_${lang}.ts: ${total} strings, all translated")
endforeach()
