# Installs the build into a scratch prefix, checks the layout, runs the installed ppb, then
# moves the prefix and runs it again (a relocatable install finds its plugins from its own path).
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}"
    RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()

foreach(path bin/ppb lib/ppb/plugins/ppb-dryrun-lsq-1.0.0.so include/ppb/abi.h
             include/ppb/plugin.hpp include/ppb/memory_model.hpp lib/libppb_host.a
             lib/cmake/ppb/ppbConfig.cmake lib/cmake/ppb/ppbConfigVersion.cmake
             lib/cmake/ppb/ppbTargets.cmake lib/cmake/ppb/ppbPlugin.cmake)
    if(NOT EXISTS "${prefix}/${path}")
        message(FATAL_ERROR "installed tree lacks ${path}")
    endif()
endforeach()
file(GLOB fixtures "${prefix}/lib/ppb/plugins/*")
list(LENGTH fixtures count)
if(NOT count EQUAL 1)
    message(FATAL_ERROR "expected only dryrun-lsq in the installed plugin directory, found: ${fixtures}")
endif()

function(run_installed root)
    execute_process(COMMAND "${root}/bin/ppb" fit "${SAMPLE}" --json
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "\"name\": \"dryrun-lsq\"")
        message(FATAL_ERROR "installed ppb in ${root} failed (${rc}): ${err}\n${out}")
    endif()
    execute_process(COMMAND "${root}/bin/ppb" plugins --json
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "${root}/lib/ppb/plugins/ppb-dryrun-lsq-1.0.0.so")
        message(FATAL_ERROR "installed ppb in ${root} does not list its own plugin: ${out}${err}")
    endif()
endfunction()

run_installed("${prefix}")
file(RENAME "${prefix}" "${WORK_DIR}/moved")
run_installed("${WORK_DIR}/moved")
message(STATUS "install layout OK, relocatable")
