# Reference test of the model families (included by src/model/CMakeLists.txt): every tiny
# preset written by `moex make-model` loads with mlx_lm.load (strict), gives finite,
# token-dependent logits and spread routing, and its tokenizer loads in transformers.
add_test(NAME model_make_model_reference
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/model_reference_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/model_reference --report)
set_tests_properties(model_make_model_reference PROPERTIES LABELS reference TIMEOUT 900)
# The stop rule (config.json, generation_config.json, tokenizer) against mlx_lm.load's
# eos_token_ids, with prompt ids.
add_test(NAME model_stop_rule_reference
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/stop_rule_reference_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/stop_rule_reference)
set_tests_properties(model_stop_rule_reference PROPERTIES LABELS reference TIMEOUT 300)
