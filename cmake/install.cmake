# What `cmake --install` puts in place, and the Debian packages CPack makes of it (cpack -G DEB in
# the build tree). Three components, one package each:
#   sdk      → libkdp-sdk-dev: public headers (include/kdp), the static libraries, the CMake package
#              (find_package(kdp CONFIG) → kdp::sdk, and kdp::topology alone; kdp_lean_program()
#              links a vendor's plugin as kdp's lean programs are), kdp-sdk.pc,
#              kdp-topology, kdp-cdi-validate
#   manager  → kdp-manager: kdp-manager and kdpctl
#   examples → kdp-examples: kdp-gpu-plugin, kdp-dra-driver, the fake topology, the sample manifests
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KDP_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/kdp")

# kdp::sdk links its private parts (the wire contracts and the shared helpers) as static archives;
# they are installed and exported too, but no header of theirs is.
set_target_properties(kdp_sdk PROPERTIES EXPORT_NAME sdk)
set_target_properties(kdp_topology PROPERTIES EXPORT_NAME topology)
set_target_properties(kdp_proto PROPERTIES EXPORT_NAME internal_proto)
set_target_properties(kdp_common PROPERTIES EXPORT_NAME internal_common)
install(TARGETS kdp_sdk kdp_topology kdp_proto kdp_common EXPORT kdpTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT sdk
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/sdk/include/kdp" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        COMPONENT sdk FILES_MATCHING PATTERN "*.h")
install(EXPORT kdpTargets NAMESPACE kdp:: DESTINATION "${KDP_CMAKE_INSTALL_DIR}" COMPONENT sdk)
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/kdpConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/kdpConfig.cmake"
                              INSTALL_DESTINATION "${KDP_CMAKE_INSTALL_DIR}")
# 0.x: a minor version may break the API, so only the same major.minor is compatible.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/kdpConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/kdpConfig.cmake" "${PROJECT_BINARY_DIR}/kdpConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/kdpLean.cmake"
        DESTINATION "${KDP_CMAKE_INSTALL_DIR}" COMPONENT sdk)
file(RELATIVE_PATH KDP_PC_PREFIX_FROM_PCDIR "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" KDP_PC_PREFIX_FROM_PCDIR "${KDP_PC_PREFIX_FROM_PCDIR}")
configure_file("${PROJECT_SOURCE_DIR}/cmake/kdp-sdk.pc.in" "${PROJECT_BINARY_DIR}/kdp-sdk.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/kdp-sdk.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
        COMPONENT sdk)
install(TARGETS kdp-topology kdp-cdi-validate RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        COMPONENT sdk)

install(TARGETS kdp-manager kdpctl kdp-conformance RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        COMPONENT manager)

install(TARGETS kdp-gpu-plugin kdp-dra-driver RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        COMPONENT examples)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/examples/gpu-plugin/topologies/"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/kdp/topologies" COMPONENT examples)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/examples/dra-driver/manifests/"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/kdp/manifests/dra" COMPONENT examples)
install(FILES "${PROJECT_SOURCE_DIR}/examples/pods/gpu-pod.yaml"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/kdp/manifests" COMPONENT examples)

# Debian packages. dpkg-shlibdeps derives each package's Depends on shared libraries from its
# binaries; the -dev package names the -dev packages its CMake and pkg-config files need.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "kdp")
set(CPACK_PACKAGE_VENDOR "kdp")
set(CPACK_PACKAGE_CONTACT "kdp maintainers <kdp-maintainers@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}/packages")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL sdk manager examples)
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION "admin")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")

set(CPACK_DEBIAN_SDK_PACKAGE_NAME "libkdp-sdk-dev")
set(CPACK_DEBIAN_SDK_PACKAGE_SECTION "libdevel")
set(CPACK_DEBIAN_SDK_PACKAGE_DEPENDS
    "libabsl-dev, libgrpc++-dev, libprotobuf-dev, libhwloc-dev, libnuma-dev, libcpp-httplib-dev, \
libyaml-cpp-dev, nlohmann-json3-dev, libssl-dev, zlib1g-dev, pkg-config")
set(CPACK_COMPONENT_SDK_DESCRIPTION
    "kdp SDK: write Kubernetes device plugins and DRA drivers in C++\n\
Headers, static libraries, the CMake package (find_package(kdp CONFIG), target kdp::sdk)\n\
and kdp-sdk.pc; kdp-topology shows what the SDK discovers, kdp-cdi-validate checks CDI specs.")

set(CPACK_DEBIAN_MANAGER_PACKAGE_NAME "kdp-manager")
set(CPACK_COMPONENT_MANAGER_DESCRIPTION
    "kubelet-faithful local device manager and DRA manager for kdp plugins\n\
kdp-manager stands in for the kubelet's device manager, DRA manager and PodResources API on a\n\
laptop or in CI; kdpctl admits pods and shows the node; kdp-conformance judges any device\n\
plugin or DRA driver against the kubelet's behaviour.")

set(CPACK_DEBIAN_EXAMPLES_PACKAGE_NAME "kdp-examples")
set(CPACK_DEBIAN_EXAMPLES_PACKAGE_RECOMMENDS "kdp-manager")
set(CPACK_COMPONENT_EXAMPLES_DESCRIPTION
    "example GPU device plugin and DRA driver built on the kdp SDK\n\
kdp-gpu-plugin and kdp-dra-driver, with a bundled fake dual-socket topology (hwloc XML) and\n\
sample manifests, to run against kdp-manager or a real kubelet.")
# Debian policy 12.5: each package ships the license as /usr/share/doc/<package>/copyright.
foreach(component_package IN ITEMS "sdk:libkdp-sdk-dev" "manager:kdp-manager"
                                   "examples:kdp-examples")
  string(REPLACE ":" ";" component_package "${component_package}")
  list(GET component_package 0 component)
  list(GET component_package 1 package)
  install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/${package}"
          RENAME copyright COMPONENT ${component})
endforeach()
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
include(CPack)
