# The build enforces the architecture: each library target is a component that owns source
# folders, and an #include of a header owned by a component the includer does not link directly
# fails the build, naming the file, the header and the rule (cmake/check_layering.py).
#
#   kdp_component(<target> PUBLIC_DIRS <dir>... [PRIVATE_DIRS <dir>...])
#
# Folders are relative to the project root; "<dir>/**" also owns its subfolders (a subfolder
# named by another component belongs to that one); an entry ending in ".h" owns that one header
# (for the SDK's include/kdp/, whose headers belong to several components). Headers in PUBLIC_DIRS may be included by the
# components that link <target>; PRIVATE_DIRS only by <target> itself (the SDK's src/). A
# component's dependencies are its target_link_libraries, PUBLIC and PRIVATE (a header-only
# component is an INTERFACE library: its INTERFACE ones): nothing to declare twice. The
# dependencies among components must have no cycle: CMake links cyclic static libraries without a
# word, and a cycle makes its components one that can be neither built nor tested apart; the check
# of a component on a cycle fails, naming it ("layering: cycle: a -> b -> a"). The check of a
# component runs before its sources compile (the target depends on it; an INTERFACE component's
# consumers do, as CMake follows an interface library's dependencies in its place) and again
# whenever one of its files, or the map of components, changes.
#
# Why a script and not the compiler: clang's -fmodules-strict-decluse (Bazel's layering_check)
# checks only the includes of the file being compiled, not those of the headers it includes, and
# gcc has no equivalent; this check reads every file of the component, headers included, under
# every compiler.

# This file's folder, where check_layering.py is (a function sees its caller's CMAKE_CURRENT_LIST_DIR).
set(KDP_LAYERING_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/check_layering.py")

function(kdp_component target)
  cmake_parse_arguments(ARG "" "" "PUBLIC_DIRS;PRIVATE_DIRS" ${ARGN})
  if(NOT ARG_PUBLIC_DIRS AND NOT ARG_PRIVATE_DIRS)
    message(FATAL_ERROR "kdp_component(${target}): give PUBLIC_DIRS or PRIVATE_DIRS")
  endif()
  set_property(TARGET ${target} PROPERTY KDP_PUBLIC_DIRS "${ARG_PUBLIC_DIRS}")
  set_property(TARGET ${target} PROPERTY KDP_PRIVATE_DIRS "${ARG_PRIVATE_DIRS}")
  set_property(GLOBAL APPEND PROPERTY KDP_COMPONENTS ${target})
endfunction()

# Called once, deferred to the end of the top-level CMakeLists.txt (every target known): writes
# the map of components and adds each component's check.
function(kdp_layering_finalize)
  find_program(KDP_PYTHON3 python3)
  if(NOT KDP_PYTHON3)
    message(WARNING "python3 not found: the layering check (cmake/layering.cmake) is skipped")
    return()
  endif()
  get_property(components GLOBAL PROPERTY KDP_COMPONENTS)
  set(json "{\"root\": \"${PROJECT_SOURCE_DIR}\", \"components\": {")
  set(separator "")
  foreach(component ${components})
    get_target_property(public ${component} KDP_PUBLIC_DIRS)
    get_target_property(private ${component} KDP_PRIVATE_DIRS)
    # A header-only component is an INTERFACE library, whose dependencies are its interface's.
    get_target_property(type ${component} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(links ${component} INTERFACE_LINK_LIBRARIES)
    else()
      get_target_property(links ${component} LINK_LIBRARIES)
    endif()
    set(deps "")
    foreach(link ${links})
      if(link IN_LIST components)
        list(APPEND deps "\"${link}\"")
      endif()
    endforeach()
    set(files "")
    set(file_paths "")
    foreach(dir ${public} ${private})
      if(dir MATCHES "\\.h$")
        set(found "${dir}")
      elseif(dir MATCHES "/\\*\\*$")
        string(REGEX REPLACE "/\\*\\*$" "" base "${dir}")
        file(GLOB_RECURSE found CONFIGURE_DEPENDS RELATIVE "${PROJECT_SOURCE_DIR}"
             "${PROJECT_SOURCE_DIR}/${base}/*.h" "${PROJECT_SOURCE_DIR}/${base}/*.cc")
      else()
        file(GLOB found CONFIGURE_DEPENDS RELATIVE "${PROJECT_SOURCE_DIR}"
             "${PROJECT_SOURCE_DIR}/${dir}/*.h" "${PROJECT_SOURCE_DIR}/${dir}/*.cc")
      endif()
      foreach(f ${found})
        list(APPEND files "\"${f}\"")
        list(APPEND file_paths "${PROJECT_SOURCE_DIR}/${f}")
      endforeach()
    endforeach()
    set(public_json "")
    foreach(d ${public})
      list(APPEND public_json "\"${d}\"")
    endforeach()
    set(private_json "")
    if(private)
      foreach(d ${private})
        list(APPEND private_json "\"${d}\"")
      endforeach()
    endif()
    list(JOIN public_json ", " public_json)
    list(JOIN private_json ", " private_json)
    list(JOIN deps ", " deps)
    list(JOIN files ", " files)
    string(APPEND json "${separator}\n  \"${component}\": {\"public\": [${public_json}], "
           "\"private\": [${private_json}], \"deps\": [${deps}], \"files\": [${files}]}")
    set(separator ",")
    set(stamp "${PROJECT_BINARY_DIR}/layering/${component}.stamp")
    add_custom_command(
      OUTPUT "${stamp}"
      COMMAND "${KDP_PYTHON3}" "${KDP_LAYERING_SCRIPT}"
              --map "${PROJECT_BINARY_DIR}/layering/components.json" --component ${component}
              --stamp "${stamp}"
      DEPENDS "${KDP_LAYERING_SCRIPT}"
              "${PROJECT_BINARY_DIR}/layering/components.json" ${file_paths}
      COMMENT "Checking the includes of ${component} against its declared dependencies"
      VERBATIM)
    add_custom_target(${component}_layering DEPENDS "${stamp}")
    add_dependencies(${component} ${component}_layering)
  endforeach()
  string(APPEND json "\n}}\n")
  # Rewritten only when it changes, so that an unchanged map does not re-run every check.
  file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/layering/components.json" CONTENT "${json}")
endfunction()
