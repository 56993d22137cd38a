# The installed package: find_package(fzg) through fzgConfig.cmake, fzgConfigVersion.cmake and
# fzgTargets.cmake (the imported target fzg::fzg), and pkg-config through fzg.pc. Included from
# the top-level CMakeLists.txt after fzg_core and its install rules are defined.
include(CMakePackageConfigHelpers)

set(FZG_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/fzg" CACHE STRING
    "Where fzgConfig.cmake is installed, relative to the prefix")
mark_as_advanced(FZG_CMAKE_INSTALL_DIR)

install(EXPORT fzgTargets NAMESPACE fzg:: DESTINATION "${FZG_CMAKE_INSTALL_DIR}")

# The toolkit the library was built against: fzgConfig.cmake looks there first for the
# CUDA runtime (the same major version), unless the consumer names one itself.
set(FZG_CUDA_TOOLKIT_ROOT "")
if(FZG_HAVE_CUDA)
  get_filename_component(FZG_CUDA_TOOLKIT_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)
endif()
configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/fzgConfig.cmake.in" "${CMAKE_CURRENT_BINARY_DIR}/fzgConfig.cmake"
  INSTALL_DESTINATION "${FZG_CMAKE_INSTALL_DIR}")
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/fzgConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMajorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/fzgConfig.cmake" "${CMAKE_CURRENT_BINARY_DIR}/fzgConfigVersion.cmake"
  DESTINATION "${FZG_CMAKE_INSTALL_DIR}")

# fzg.pc: the same usage requirements as fzg::fzg, for builds without CMake. The prefix is
# found from the .pc file's own place, so `cmake --install build --prefix P` works with any P.
set(FZG_PC_REQUIRES "")
set(FZG_PC_CFLAGS "")
set(FZG_PC_LIBS "")
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(FZG_PC_NLOHMANN_JSON QUIET "nlohmann_json>=3")
endif()
if(FZG_PC_NLOHMANN_JSON_FOUND)
  set(FZG_PC_REQUIRES "Requires: nlohmann_json >= 3")
else()
  # No nlohmann_json.pc: name its include directory directly (unless it is the system's).
  get_target_property(_fzg_json_includes nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)
  foreach(_dir IN LISTS _fzg_json_includes)
    if(_dir AND NOT _dir STREQUAL "/usr/include")
      string(APPEND FZG_PC_CFLAGS " -I${_dir}")
    endif()
  endforeach()
endif()
string(APPEND FZG_PC_CFLAGS " ${OpenMP_CXX_FLAGS}")
if(FZG_HAVE_CUDA)
  string(APPEND FZG_PC_CFLAGS " -DFZG_HAVE_CUDA=1")
endif()
# A static libfzg.a needs its private dependencies on the consumer's link line; a shared
# one carries OpenMP itself, and only CUDA::cudart (public) stays.
get_target_property(_fzg_type fzg_core TYPE)
set(_fzg_libs "${OpenMP_CXX_FLAGS}")
if(_fzg_type STREQUAL "SHARED_LIBRARY")
  set(FZG_PC_LIBS_PRIVATE "Libs.private: ${OpenMP_CXX_FLAGS}")
  set(_fzg_libs "")
else()
  set(FZG_PC_LIBS_PRIVATE "")
endif()
if(FZG_HAVE_CUDA)
  string(APPEND _fzg_libs " -L${CUDAToolkit_LIBRARY_DIR} -lcudart")
endif()
string(STRIP "${_fzg_libs}" FZG_PC_LIBS)
string(STRIP "${FZG_PC_CFLAGS}" FZG_PC_CFLAGS)
# The prefix is the one installed to (`cmake --install build --prefix P` included), so fzg.pc
# is written at install time from a template with everything else filled in now.
set(FZG_PC_PREFIX "@FZG_PC_INSTALL_PREFIX@")
foreach(_kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_kind}}")
    set(FZG_PC_${_kind} "${CMAKE_INSTALL_${_kind}}")
  else()
    set(FZG_PC_${_kind} "\${prefix}/${CMAKE_INSTALL_${_kind}}")
  endif()
endforeach()
configure_file("${CMAKE_CURRENT_LIST_DIR}/fzg.pc.in" "${CMAKE_CURRENT_BINARY_DIR}/fzg.pc.template" @ONLY)
install(CODE "set(_fzg_pc_template \"${CMAKE_CURRENT_BINARY_DIR}/fzg.pc.template\")
set(_fzg_pc_dir \"${CMAKE_INSTALL_LIBDIR}/pkgconfig\")")
install(CODE [[
  file(READ "${_fzg_pc_template}" _fzg_pc)
  string(REPLACE "@FZG_PC_INSTALL_PREFIX@" "${CMAKE_INSTALL_PREFIX}" _fzg_pc "${_fzg_pc}")
  if(NOT IS_ABSOLUTE "${_fzg_pc_dir}")
    set(_fzg_pc_dir "${CMAKE_INSTALL_PREFIX}/${_fzg_pc_dir}")
  endif()
  message(STATUS "Installing: $ENV{DESTDIR}${_fzg_pc_dir}/fzg.pc")
  file(WRITE "$ENV{DESTDIR}${_fzg_pc_dir}/fzg.pc" "${_fzg_pc}")
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES "$ENV{DESTDIR}${_fzg_pc_dir}/fzg.pc")
]])
