#===- AddMoE.cmake - Thin wrappers over MLIR's CMake helpers --------------===#
#
# Aggregates generated documentation under one `moe-doc` target.
#
#===----------------------------------------------------------------------===#

# Generates Markdown for `td_file` with `mode` into docs/<folder>/<name>.md of
# the build tree and hooks it into `moe-doc`.
function(add_moe_doc td_file output_name folder mode)
  set(LLVM_TARGET_DEFINITIONS ${td_file}.td)
  mlir_tablegen(${output_name}.md ${mode} ${ARGN})
  set(gen_doc ${MOE_DOCS_DIR}/${folder}/${output_name}.md)
  add_custom_command(
    OUTPUT ${gen_doc}
    COMMAND ${CMAKE_COMMAND} -E copy
            ${CMAKE_CURRENT_BINARY_DIR}/${output_name}.md ${gen_doc}
    DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/${output_name}.md)
  add_custom_target(${output_name}DocGen DEPENDS ${gen_doc})
  add_dependencies(moe-doc ${output_name}DocGen)
endfunction()

set(MOE_DOCS_DIR ${CMAKE_BINARY_DIR}/docs)
