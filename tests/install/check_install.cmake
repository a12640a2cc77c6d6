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
             include/ppb/plugin.hpp include/ppb/memory_model.hpp lib/libppb_host.a lib/libppb_plugin_api.a
             lib/libppb_partitioner.a lib/libppb_importers.a include/ppb/partition/problem.hpp
             include/ppb/importers/layout.hpp include/ppb/output_file.hpp
             lib/cmake/ppb/ppbConfig.cmake lib/cmake/ppb/ppbConfigVersion.cmake
             lib/cmake/ppb/ppbTargets.cmake lib/cmake/ppb/ppbPlugin.cmake)
    if(NOT EXISTS "${prefix}/${path}")
        message(FATAL_ERROR "installed tree lacks ${path}")
    endif()
endforeach()
# Exactly the project's plugins: test fixtures are never installed.
file(GLOB installed RELATIVE "${prefix}/lib/ppb/plugins" "${prefix}/lib/ppb/plugins/*")
list(SORT installed)
string(REPLACE "," ";" EXPECTED_PLUGINS "${EXPECTED_PLUGINS}")
if(NOT installed STREQUAL "${EXPECTED_PLUGINS}")
    message(FATAL_ERROR "installed plugins: ${installed}; expected: ${EXPECTED_PLUGINS}")
endif()

function(run_installed root)
    execute_process(COMMAND "${root}/bin/ppb" fit "${SAMPLE}" --json
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "\"name\": \"dryrun-lsq\"")
        message(FATAL_ERROR "installed ppb in ${root} failed (${rc}): ${err}\n${out}")
    endif()
    if(PYTHON)
        # The installed Python package finds the plugins installed beside it, wherever the
        # prefix is.
        execute_process(
            COMMAND ${CMAKE_COMMAND} -E env --unset=PPB_PLUGIN_PATH "PYTHONPATH=${root}/${PYTHON_DIR}"
                "${PYTHON}" -c "import ppb; print(sorted(r['path'] for r in ppb.plugins() if r['verdict'] == 'usable'))"
            RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
        if(NOT rc EQUAL 0 OR NOT out MATCHES "${root}/lib/ppb/plugins/ppb-dryrun-lsq-")
            message(FATAL_ERROR "installed ppb module in ${root} does not find its plugins (${rc}): ${out}${err}")
        endif()
    endif()
    execute_process(COMMAND "${root}/bin/ppb" plugins --json
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "${root}/lib/ppb/plugins/ppb-dryrun-lsq-1.0.0.so")
        message(FATAL_ERROR "installed ppb in ${root} does not list its own plugin: ${out}${err}")
    endif()
endfunction()

# A third-party plugin built out of tree against the installed package, installed beside ours.
execute_process(COMMAND ${CMAKE_COMMAND} -S "${TEMPLATE_DIR}" -B "${WORK_DIR}/template-build"
        -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring the plugin template against ${prefix} failed:\n${out}${err}")
endif()
foreach(step "--build;${WORK_DIR}/template-build" "--install;${WORK_DIR}/template-build;--prefix;${prefix}")
    execute_process(COMMAND ${CMAKE_COMMAND} ${step} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "plugin template: cmake ${step} failed:\n${out}${err}")
    endif()
endforeach()

# "26661.099266850266" -> 26661099266 (the value in units of 1e-6 MB, truncated).
function(micro_mb value out)
    if(NOT value MATCHES "^([0-9]+)\\.?([0-9]*)$")
        message(FATAL_ERROR "not a plain positive decimal: ${value}")
    endif()
    string(SUBSTRING "${CMAKE_MATCH_2}000000" 0 6 fraction)
    math(EXPR result "${CMAKE_MATCH_1} * 1000000 + 1${fraction} - 1000000")
    set(${out} ${result} PARENT_SCOPE)
endfunction()

function(check_template root)
    execute_process(COMMAND "${root}/bin/ppb" fit "${SAMPLE}" --json
        OUTPUT_FILE "${WORK_DIR}/fit.json" RESULT_VARIABLE rc)
    set(common --stages 8 --micro-batches 32 --stage 3 --layers select=9,full=1 --json)
    execute_process(COMMAND "${root}/bin/ppb" predict "${SAMPLE}" ${common}
        RESULT_VARIABLE rc1 OUTPUT_VARIABLE fitted ERROR_VARIABLE err1)
    execute_process(COMMAND "${root}/bin/ppb" predict --model coefficients
            --model-options "${WORK_DIR}/fit.json" ${common}
        RESULT_VARIABLE rc2 OUTPUT_VARIABLE configured ERROR_VARIABLE err2)
    if(NOT rc EQUAL 0 OR NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
        message(FATAL_ERROR "template plugin in ${root}: ${rc} ${rc1} ${rc2}: ${err1}${err2}")
    endif()
    string(JSON a GET "${fitted}" peak_memory_mb)
    string(JSON b GET "${configured}" peak_memory_mb)
    # Equal up to rounding (the two sum the terms in another order): compare in micro-MB.
    micro_mb("${a}" ai)
    micro_mb("${b}" bi)
    math(EXPR diff "${ai} - ${bi}")
    if(diff GREATER 2 OR diff LESS -2)
        message(FATAL_ERROR "the template plugin predicts ${b} MB where dryrun-lsq predicts ${a} MB")
    endif()
endfunction()

# A host program built out of tree against the installed package: links ppb::partitioner.
function(check_consumer root)
    set(build "${WORK_DIR}/consumer-build")
    file(REMOVE_RECURSE "${build}")
    execute_process(COMMAND ${CMAKE_COMMAND} -S "${CONSUMER_DIR}" -B "${build}"
            -DCMAKE_PREFIX_PATH=${root} -DCMAKE_BUILD_TYPE=Release
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "configuring the partitioner consumer against ${root} failed:\n${out}${err}")
    endif()
    execute_process(COMMAND ${CMAKE_COMMAND} --build "${build}"
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "building the partitioner consumer failed:\n${out}${err}")
    endif()
    execute_process(COMMAND "${build}/plan_four_stages"
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "iteration time 51.0")
        message(FATAL_ERROR "the partitioner consumer failed (${rc}):\n${out}${err}")
    endif()
endfunction()

run_installed("${prefix}")
check_consumer("${prefix}")
check_template("${prefix}")
file(RENAME "${prefix}" "${WORK_DIR}/moved")
run_installed("${WORK_DIR}/moved")
check_template("${WORK_DIR}/moved")
message(STATUS "install layout OK, relocatable")
