# ppb_add_plugin(<target> NAME <name> VERSION <x.y.z> SOURCES <src>...
#                [OUTPUT_DIRECTORY <dir>] [NO_INSTALL])
#
# Builds a memory-model plugin: a MODULE library named ppb-<name>-<version>.so, with hidden
# visibility, no undefined symbols, and PPB_PLUGIN_NAME / PPB_PLUGIN_VERSION defined for
# PPB_EXPORT_MEMORY_MODEL, so that the file name and the plugin's manifest always agree.
# Only the entry point is exported (ppbPluginExports.map), and no symbol of a static library
# linked into the module (--exclude-libs). Compile the static libraries a plugin links with
# hidden visibility too (CMAKE_CXX_VISIBILITY_PRESET). Installs into <prefix>/lib/ppb/plugins
# unless NO_INSTALL.
set(_ppb_plugin_exports_map "${CMAKE_CURRENT_LIST_DIR}/ppbPluginExports.map")

function(ppb_add_plugin target)
    cmake_parse_arguments(PARSE_ARGV 1 arg "NO_INSTALL" "NAME;VERSION;OUTPUT_DIRECTORY" "SOURCES")
    if(NOT arg_NAME OR NOT arg_VERSION OR NOT arg_SOURCES)
        message(FATAL_ERROR "ppb_add_plugin(${target}): NAME, VERSION and SOURCES are required")
    endif()
    if(NOT arg_NAME MATCHES "^[a-z0-9][a-z0-9_.-]*$" OR arg_NAME MATCHES "@")
        message(FATAL_ERROR "ppb_add_plugin(${target}): NAME '${arg_NAME}' must be lower-case "
                            "letters, digits, '-', '_' or '.'")
    endif()
    if(NOT arg_VERSION MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")
        message(FATAL_ERROR "ppb_add_plugin(${target}): VERSION '${arg_VERSION}' is not MAJOR.MINOR.PATCH")
    endif()
    add_library(${target} MODULE ${arg_SOURCES})
    if(TARGET ppb_plugin_api)
        target_link_libraries(${target} PRIVATE ppb_plugin_api)
    else()
        target_link_libraries(${target} PRIVATE ppb::plugin_api)
    endif()
    target_compile_definitions(${target} PRIVATE
        PPB_PLUGIN_NAME="${arg_NAME}" PPB_PLUGIN_VERSION="${arg_VERSION}")
    target_compile_features(${target} PRIVATE cxx_std_20)
    if(NOT arg_OUTPUT_DIRECTORY)
        if(DEFINED PPB_PLUGIN_OUTPUT_DIRECTORY)
            set(arg_OUTPUT_DIRECTORY "${PPB_PLUGIN_OUTPUT_DIRECTORY}")
        else()
            set(arg_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
        endif()
    endif()
    set_target_properties(${target} PROPERTIES
        PREFIX ""
        OUTPUT_NAME "ppb-${arg_NAME}-${arg_VERSION}"
        SUFFIX ".so"
        CXX_VISIBILITY_PRESET hidden
        VISIBILITY_INLINES_HIDDEN ON
        LIBRARY_OUTPUT_DIRECTORY "${arg_OUTPUT_DIRECTORY}")
    # Export only the entry point; with GCC, no STB_GNU_UNIQUE symbols either, which would make
    # the library impossible to unload.
    target_link_options(${target} PRIVATE "LINKER:--no-undefined" "LINKER:--exclude-libs,ALL"
        "LINKER:--version-script=${_ppb_plugin_exports_map}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${_ppb_plugin_exports_map}")
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)
    if(NOT arg_NO_INSTALL)
        install(TARGETS ${target} LIBRARY DESTINATION "${PPB_PLUGIN_SUBDIR}")
        # Every installed target is listed, so that one target can build them all (ppb's own
        # ppb_installable).
        set_property(GLOBAL APPEND PROPERTY PPB_INSTALLED_TARGETS ${target})
    endif()
endfunction()
