# The Generator's logits processors against a float32 reference in Python (numpy) on the same
# logits, bit for bit (label `reference`). Included by src/generate/CMakeLists.txt.
add_executable(generator_reference_main ${CMAKE_CURRENT_SOURCE_DIR}/reference/generator_reference_main.cc)
target_link_libraries(generator_reference_main PRIVATE moex_generate nlohmann_json::nlohmann_json)
add_test(NAME generate_processors_reference
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/reference/generator_reference_test.py
          --tool $<TARGET_FILE:generator_reference_main>
          --work ${CMAKE_CURRENT_BINARY_DIR}/generator_reference)
set_tests_properties(generate_processors_reference PROPERTIES LABELS reference TIMEOUT 300)
