# Runs the quantization wizard under Xvfb twice: on the default model (SmolLM2 GGUF) up to the
# size step, and on a tiny synthetic model through a real quantization to the result. Saves
# every step as PNG (PREFIX_<step>.png, PREFIX_tiny_<step>.png) and fails when the app fails or a
# picture is missing or blank-sized.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/data/hearth/models" "${WORK}/config/hearth")
get_filename_component(model_name "${MODEL}" NAME)
file(CREATE_LINK "${MODEL}" "${WORK}/data/hearth/models/${model_name}" SYMBOLIC)
set(ENV{XDG_DATA_HOME} "${WORK}/data")
set(ENV{XDG_CONFIG_HOME} "${WORK}/config")
file(WRITE "${WORK}/config/hearth/settings.ini" "[ui]\ntheme=light\nlanguage=en\n")
execute_process(COMMAND "${WRITER}" "${WORK}/tiny" 8 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the tiny model could not be written (${rc})")
endif()

function(run_app)
  execute_process(
    COMMAND xvfb-run -a -s "-screen 0 1400x900x24" "${APP}" ${ARGN} --timeout 300
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the app exited with ${rc}")
  endif()
endfunction()

run_app(--wizard-demo "${WORK}/data/hearth/models/${model_name}" --screenshot "${PREFIX}")
run_app(--wizard-demo "${WORK}/tiny" --wizard-demo-run --screenshot "${PREFIX}_tiny")

foreach(png ${PREFIX}_source ${PREFIX}_size ${PREFIX}_tiny_review ${PREFIX}_tiny_running
            ${PREFIX}_tiny_result)
  if(NOT EXISTS "${png}.png")
    message(FATAL_ERROR "no screenshot at ${png}.png")
  endif()
  file(SIZE "${png}.png" size)
  if(size LESS 20000)
    message(FATAL_ERROR "${png}.png is only ${size} bytes")
  endif()
  message("screenshot: ${png}.png (${size} bytes)")
endforeach()
