# Reference test of `moex generate --chat` and `moex chat` (label `reference`): prompt ids
# against transformers' apply_chat_template, greedy answers against mlx-lm, KV reuse across
# turns against a fresh run. Included by tools/CMakeLists.txt.
add_test(NAME chat_command_reference
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/chat_reference_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/chat_reference)
set_tests_properties(chat_command_reference PROPERTIES LABELS reference TIMEOUT 600)
# `moex chat --spec ngram` gives plain chat's turns (attention and recurrent tiny models); ~1 s.
add_test(NAME chat_spec_test
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/chat_spec_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/chat_spec)
set_tests_properties(chat_spec_test PROPERTIES LABELS reference TIMEOUT 300)
