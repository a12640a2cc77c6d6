# ppb_add_plugin(<target> NAME <name> VERSION <x.y.z> SOURCES <src>...
#                [OUTPUT_DIRECTORY <dir>] [NO_INSTALL])
#
# Builds a memory-model plugin: a MODULE library named ppb-<name>-<version>.so, with hidden
# visibility, no undefined symbols, and PPB_PLUGIN_NAME / PPB_PLUGIN_VERSION defined for
# PPB_EXPORT_MEMORY_MODEL, so that the file name and the plugin's manifest always agree.
# A plugin written in C (every source a .c file; enable_language(C) first) gets ppb/abi.h's
# include directory only, C11, and exports its table with PPB_EXPORT_MEMORY_MODEL_TABLE.
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
        set(api ppb_plugin_api)
    else()
        set(api ppb::plugin_api)
    endif()
    set(in_c ON)
    foreach(source IN LISTS arg_SOURCES)
        if(NOT source MATCHES "\\.c$")
            set(in_c OFF)
        endif()
    endforeach()
    if(in_c)
        # The contract's header alone: none of the C++ wrappers' code, no C++ runtime.
        target_include_directories(${target} PRIVATE
            $<TARGET_PROPERTY:${api},INTERFACE_INCLUDE_DIRECTORIES>)
        target_compile_features(${target} PRIVATE c_std_11)
    else()
        target_link_libraries(${target} PRIVATE ${api})
        target_compile_features(${target} PRIVATE cxx_std_20)
    endif()
    target_compile_definitions(${target} PRIVATE
        PPB_PLUGIN_NAME="${arg_NAME}" PPB_PLUGIN_VERSION="${arg_VERSION}")
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
        C_VISIBILITY_PRESET hidden
        VISIBILITY_INLINES_HIDDEN ON
        LIBRARY_OUTPUT_DIRECTORY "${arg_OUTPUT_DIRECTORY}")
    # Export only the entry point; with GCC, no STB_GNU_UNIQUE symbols either, which would make
    # the library impossible to unload.
    target_link_options(${target} PRIVATE "LINKER:--no-undefined" "LINKER:--exclude-libs,ALL"
        "LINKER:--version-script=${_ppb_plugin_exports_map}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${_ppb_plugin_exports_map}")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-fno-gnu-unique>)
    if(NOT arg_NO_INSTALL)
        install(TARGETS ${target} LIBRARY DESTINATION "${PPB_PLUGIN_SUBDIR}")
        # Every installed target is listed, so that one target can build them all (ppb's own
        # ppb_installable).
        set_property(GLOBAL APPEND PROPERTY PPB_INSTALLED_TARGETS ${target})
    endif()
endfunction()
