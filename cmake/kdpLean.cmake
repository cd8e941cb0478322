# Lean programs: Debian's static archives instead of its shared libraries, for the binaries a node
# runs (kdp's build with KDP_LEAN_BINARIES, and a vendor's through the installed package, which
# includes this file). docs/benchmarks.md (footprint_benchmark) has the measurements: a device
# plugin linked this way holds about half the resident memory of the shared build and starts in
# a few milliseconds, because a process in a container shares no library page with anything.
#
#   kdp_lean_static_imports()
#     Points the imported targets of gRPC (the TLS-free grpc_unsecure/grpc++_unsecure), upb,
#     address_sorting, c-ares, RE2, protobuf, Abseil, zlib, yaml-cpp, hwloc and libnuma at the `.a` Debian
#     ships next to each `.so` (hwloc's archive adds its private libudev and libm, which stay
#     shared). Every target of the project that links them links the archives from then on.
#     glibc, libudev, OpenSSL and cpp-httplib (no archive in Debian) stay shared. Idempotent.
#
#   kdp_lean_program(<target> [SHARED_LIBSTDCXX])
#     Links the executable <target> the lean way: kdp_lean_static_imports(), libstdc++ and libgcc
#     static (-static-libstdc++ -static-libgcc), unreferenced sections dropped (-Wl,--gc-sections;
#     compile with -ffunction-sections -fdata-sections, as kdp's build does with the option on, for
#     the most of it) and no shared library kept that nothing references (-Wl,--as-needed: a
#     device plugin does not load cpp-httplib or OpenSSL, which only the DRA side uses).
#     SHARED_LIBSTDCXX keeps libstdc++ shared: for a program that loads cpp-httplib, which needs
#     the shared libstdc++ anyway (two copies in one process would be no saving and a risk).
#     hwloc's symbols stay exported, so its dlopen()ed plugins (hwloc_pci.so) find its core.
include_guard(GLOBAL)

# Sets <out_archive> to the .a next to the shared library `path` when its name (after "lib")
# matches `names` and the archive exists, else to ""; <out_name> to that name.
function(_kdp_lean_archive path names out_archive out_name)
  set(${out_archive} "" PARENT_SCOPE)
  if(NOT path MATCHES "^(.*)/lib([^/]+)\\.so(\\.[0-9.]+)?$")
    return()
  endif()
  set(dir "${CMAKE_MATCH_1}")
  set(name "${CMAKE_MATCH_2}")
  if(name MATCHES "${names}" AND EXISTS "${dir}/lib${name}.a")
    set(${out_archive} "${dir}/lib${name}.a" PARENT_SCOPE)
    set(${out_name} "${name}" PARENT_SCOPE)
  endif()
endfunction()

function(kdp_lean_static_imports)
  get_property(done GLOBAL PROPERTY KDP_LEAN_STATIC_IMPORTS_DONE)
  if(done)
    return()
  endif()
  set_property(GLOBAL PROPERTY KDP_LEAN_STATIC_IMPORTS_DONE TRUE)
  # The libraries whose archive replaces the shared library (by the name after "lib").
  set(static_names "^(absl_.*|grpc_unsecure|grpc\\+\\+_unsecure|gpr|upb|address_sorting|cares|re2|protobuf|z|hwloc|numa|yaml-cpp)$")
  get_property(targets DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" PROPERTY IMPORTED_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      # pkg-config's imported targets list full paths in their link interface.
      get_target_property(libs ${target} INTERFACE_LINK_LIBRARIES)
      if(NOT libs)
        continue()
      endif()
      set(changed FALSE)
      set(new_libs "")
      foreach(lib IN LISTS libs)
        _kdp_lean_archive("${lib}" "${static_names}" archive name)
        if(archive)
          list(APPEND new_libs "${archive}")
          if(name STREQUAL "hwloc")
            # hwloc's Libs.private; libudev-dev (libudev.so) need not be installed.
            find_library(KDP_LEAN_UDEV NAMES udev libudev.so.1 REQUIRED)
            list(APPEND new_libs "${KDP_LEAN_UDEV}" m)
          endif()
          set(changed TRUE)
        else()
          list(APPEND new_libs "${lib}")
        endif()
      endforeach()
      if(changed)
        set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${new_libs}")
      endif()
      continue()
    endif()
    if(NOT type MATCHES "^(SHARED|UNKNOWN|STATIC)_LIBRARY$")
      continue()
    endif()
    get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
    set(props IMPORTED_LOCATION)
    foreach(config IN LISTS configs)
      list(APPEND props IMPORTED_LOCATION_${config})
    endforeach()
    foreach(prop IN LISTS props)
      get_target_property(location ${target} ${prop})
      _kdp_lean_archive("${location}" "${static_names}" archive name)
      if(archive)
        set_target_properties(${target} PROPERTIES ${prop} "${archive}" IMPORTED_NO_SONAME TRUE)
        string(REPLACE "IMPORTED_LOCATION" "IMPORTED_SONAME" soname_prop "${prop}")
        set_property(TARGET ${target} PROPERTY ${soname_prop})
      endif()
    endforeach()
  endforeach()
  # Debian's libprotobuf.a uses zlib (gzip streams) and threads, which its shared library brought.
  if(TARGET protobuf::libprotobuf AND TARGET ZLIB::ZLIB)
    set_property(TARGET protobuf::libprotobuf APPEND PROPERTY INTERFACE_LINK_LIBRARIES ZLIB::ZLIB)
  endif()
endfunction()

function(kdp_lean_program target)
  cmake_parse_arguments(ARG "SHARED_LIBSTDCXX" "" "" ${ARGN})
  kdp_lean_static_imports()
  # hwloc's plugins (hwloc_pci.so: the PCI devices, so the GPUs, of a live host) are loaded with
  # dlopen and call back into hwloc's core, which is in the executable now: export its symbols.
  target_link_options(${target} PRIVATE -static-libgcc -Wl,--gc-sections -Wl,--as-needed
                      "-Wl,--export-dynamic-symbol=hwloc_*")
  if(NOT ARG_SHARED_LIBSTDCXX)
    target_link_options(${target} PRIVATE -static-libstdc++)
  endif()
endfunction()
