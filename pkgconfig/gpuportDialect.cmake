# gpuport CMake helpers for dialect sources (.cu files written against gpuport/kernel.h),
# loaded by find_package(gpuport); CMake 3.16 or newer.
#
#   gpuport_add_executable(name SOURCES a.cu main.c ... [BACKEND cpu|cuda|hip]
#                          [LIBRARIES lib...])
#       add_executable() with the .cu sources built as dialect sources, linked with
#       gpuport::<backend> (the libraries' C++ runtime included).
#   gpuport_kernel_sources(target [BACKEND cpu|cuda|hip] a.cu ...)
#       builds those sources of an existing target as dialect sources.
#
# BACKEND defaults to GPUPORT_BACKEND (a cache variable, initially the default backend
# gpuport was installed with). On cpu a dialect source is compiled as C++17 (LANGUAGE
# CXX, -x c++, GP_BUILD_CPU) at warp width 32 in the target, and once more at width 64
# (GP_WARP_SIZE=64, GP_KERNEL_SUFFIX=_w64) by `gpuport-cc -c --w64-only`, whose object
# keeps only its kernel and symbol descriptors global (its copy of main and other host
# code never collides with the first), so that GP_CPU_WARP_SIZE=64 runs the kernels at
# 64. The width-64 build sees the target's include directories and compile definitions.
# On cuda the sources get LANGUAGE CUDA (enable_language(CUDA) in the project), on hip
# LANGUAGE HIP (CMake 3.21, enable_language(HIP)).
set(GPUPORT_BACKEND "${gpuport_DEFAULT_BACKEND}" CACHE STRING "gpuport backend of gpuport_add_executable (cpu, cuda, hip)")
set(_gpuport_cc "${_gp_prefix}/bin/gpuport-cc")

function(gpuport_kernel_sources target)
  cmake_parse_arguments(GPK "" "BACKEND" "" ${ARGN})
  set(backend "${GPK_BACKEND}")
  if(NOT backend)
    set(backend "${GPUPORT_BACKEND}")
  endif()
  foreach(src IN LISTS GPK_UNPARSED_ARGUMENTS)
    get_filename_component(abs "${src}" ABSOLUTE)
    if(backend STREQUAL "cpu")
      set_source_files_properties("${abs}" PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "-x;c++")
      target_sources(${target} PRIVATE "${abs}")
      get_filename_component(stem "${src}" NAME_WE)
      string(MAKE_C_IDENTIFIER "${src}" id)
      set(obj "${CMAKE_CURRENT_BINARY_DIR}/gpuport_w64/${target}/${id}.w64.o")
      set(incs "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
      set(defs "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
      add_custom_command(OUTPUT "${obj}"
        COMMAND ${CMAKE_COMMAND} -E make_directory "${CMAKE_CURRENT_BINARY_DIR}/gpuport_w64/${target}"
        COMMAND ${CMAKE_COMMAND} -E env "CXX=${CMAKE_CXX_COMPILER}" "${_gpuport_cc}" --backend cpu -c --w64-only
                "$<$<BOOL:${incs}>:-I$<JOIN:${incs},;-I>>" "$<$<BOOL:${defs}>:-D$<JOIN:${defs},;-D>>"
                "${abs}" -o "${obj}"
        DEPENDS "${abs}" IMPLICIT_DEPENDS CXX "${abs}"
        COMMAND_EXPAND_LISTS VERBATIM
        COMMENT "gpuport: ${src} at warp width 64")
      target_sources(${target} PRIVATE "${obj}")
      set_source_files_properties("${obj}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
      target_compile_definitions(${target} PRIVATE GP_BUILD_CPU)
      target_compile_features(${target} PRIVATE cxx_std_17)
    elseif(backend STREQUAL "cuda")
      set_source_files_properties("${abs}" PROPERTIES LANGUAGE CUDA)
      target_sources(${target} PRIVATE "${abs}")
      target_compile_definitions(${target} PRIVATE GP_BUILD_CUDA)
    elseif(backend STREQUAL "hip")
      set_source_files_properties("${abs}" PROPERTIES LANGUAGE HIP)
      target_sources(${target} PRIVATE "${abs}")
      target_compile_definitions(${target} PRIVATE GP_BUILD_HIP __HIP_PLATFORM_AMD__)
    else()
      message(FATAL_ERROR "gpuport_kernel_sources: unknown backend '${backend}' (cpu, cuda, hip)")
    endif()
  endforeach()
endfunction()

function(gpuport_add_executable name)
  cmake_parse_arguments(GPA "" "BACKEND" "SOURCES;LIBRARIES" ${ARGN})
  set(backend "${GPA_BACKEND}")
  if(NOT backend)
    set(backend "${GPUPORT_BACKEND}")
  endif()
  if(NOT TARGET gpuport::${backend})
    message(FATAL_ERROR "gpuport_add_executable: the ${backend} backend is not installed (${gpuport_BACKENDS})")
  endif()
  set(dialect "")
  set(other "")
  foreach(src IN LISTS GPA_SOURCES)
    if(src MATCHES "\\.cu$")
      list(APPEND dialect "${src}")
    else()
      list(APPEND other "${src}")
    endif()
  endforeach()
  add_executable(${name} ${other})
  gpuport_kernel_sources(${name} BACKEND ${backend} ${dialect})
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE CXX)
  target_link_libraries(${name} PRIVATE gpuport::${backend} ${GPA_LIBRARIES} m)
endfunction()
