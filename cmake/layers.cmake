# The layers of src/, one static library each, depending one way:
#
#   cli, python -> tune, runtime, workloads;  tune -> harness -> backends -> jit, process;
#   runtime -> backends;  jit -> cuda, store, process;  cuda, store, process, workloads -> core.
#
# A layer's include path is a folder of links (build/layers/<layer>/) to its own folder of src/,
# to those of every layer below it, and to the public headers (include/gemmforge/) those layers
# implement: an include that runs up or sideways names a file that is not there, and the build
# fails. kernels/ (device code, and the headers host and device share) is visible to every layer.
#
#   gf_layer(NAME [DEPS layer...] [PUBLIC_HEADERS file...] [SOURCES extra...] [LINK target...]
#            [PRIVATE_LINK target...] [NO_LIBRARY])
function(gf_layer name)
  cmake_parse_arguments(L "NO_LIBRARY" "" "DEPS;PUBLIC_HEADERS;SOURCES;LINK;PRIVATE_LINK" ${ARGN})
  set(visible ${name})
  foreach(dep IN LISTS L_DEPS)
    get_property(below GLOBAL PROPERTY GF_LAYER_VISIBLE_${dep})
    if(NOT below)
      message(FATAL_ERROR "layer ${name} depends on ${dep}, which is not declared before it")
    endif()
    list(APPEND visible ${below})
  endforeach()
  list(REMOVE_DUPLICATES visible)
  set_property(GLOBAL PROPERTY GF_LAYER_VISIBLE_${name} ${visible})
  set_property(GLOBAL PROPERTY GF_LAYER_PUBLIC_${name} ${L_PUBLIC_HEADERS})

  set(dir ${CMAKE_BINARY_DIR}/layers/${name})
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir}/gemmforge)
  foreach(layer IN LISTS visible)
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${layer} ${dir}/${layer} SYMBOLIC)
    get_property(headers GLOBAL PROPERTY GF_LAYER_PUBLIC_${layer})
    foreach(h IN LISTS headers)
      file(CREATE_LINK ${CMAKE_SOURCE_DIR}/include/gemmforge/${h} ${dir}/gemmforge/${h} SYMBOLIC)
    endforeach()
  endforeach()

  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cpp ${CMAKE_SOURCE_DIR}/src/${name}/*.cu)
  set(GF_LAYER_${name}_SOURCES ${sources} PARENT_SCOPE)
  if(L_NO_LIBRARY)
    return()
  endif()
  add_library(gf_${name} STATIC ${sources} ${L_SOURCES})
  gf_layer_includes(gf_${name} ${name})
  foreach(dep IN LISTS L_DEPS)
    target_link_libraries(gf_${name} PUBLIC gf_${dep})
  endforeach()
  target_link_libraries(gf_${name} PUBLIC ${L_LINK} PRIVATE ${L_PRIVATE_LINK})
endfunction()

# Compiles target with the include path, warnings and definitions of layer `name`.
function(gf_layer_includes target name)
  target_include_directories(${target} PRIVATE ${CMAKE_BINARY_DIR}/layers/${name} ${CMAKE_SOURCE_DIR}/kernels)
  target_compile_definitions(${target} PRIVATE GF_VERSION="${PROJECT_VERSION}")
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-missing-field-initializers>
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
endfunction()
