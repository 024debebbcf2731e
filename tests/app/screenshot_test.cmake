# Runs the app under Xvfb: load MODEL, send one message, wait for the answer, save the window
# to PNG. Fails when the app fails or the picture is missing or blank-sized.
file(REMOVE "${PNG}")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/data/hearth/models" "${WORK}/config")
# The default model in the default models folder, as after scripts/setup.sh.
get_filename_component(model_name "${MODEL}" NAME)
file(CREATE_LINK "${MODEL}" "${WORK}/data/hearth/models/${model_name}" SYMBOLIC)
set(ENV{XDG_DATA_HOME} "${WORK}/data")
set(ENV{XDG_CONFIG_HOME} "${WORK}/config")
# A light theme and a fixed language, whatever the machine's locale says.
file(WRITE "${WORK}/config/hearth/settings.ini" "[ui]\ntheme=light\nlanguage=en\n[sampling]\nmaxTokens=200\ntemperature=0\n")
execute_process(
  COMMAND xvfb-run -a -s "-screen 0 1400x900x24" "${APP}" --model "${MODEL}" --device cpu
          --prompt "Write a Python function that reverses a string, with a short explanation."
          --screenshot "${PNG}" --timeout 400
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the app exited with ${rc}")
endif()
if(NOT EXISTS "${PNG}")
  message(FATAL_ERROR "no screenshot at ${PNG}")
endif()
file(SIZE "${PNG}" size)
if(size LESS 20000)
  message(FATAL_ERROR "the screenshot is only ${size} bytes")
endif()
message("screenshot: ${PNG} (${size} bytes)")
