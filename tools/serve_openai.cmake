# End-to-end test of `moex serve` with the official openai client (label `reference`: it runs
# the .venv Python of scripts/setup.sh). Included by tools/CMakeLists.txt when serve is built.
add_test(NAME serve_openai_test
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/serve_openai_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/serve_openai)
set_tests_properties(serve_openai_test PROPERTIES LABELS reference TIMEOUT 600)
# The bounded load test: 64 requests from 8 clients on 4 slots, some disconnecting mid-stream.
add_test(NAME serve_load_test
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/serve_load_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/serve_load)
set_tests_properties(serve_load_test PROPERTIES LABELS "reference;slow" TIMEOUT 600)
# Hostile HTTP input (issue #32): each attack scaled to seconds; about 30 s in all.
add_test(NAME serve_hostile_test
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/serve_hostile_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/serve_hostile)
set_tests_properties(serve_hostile_test PROPERTIES LABELS reference TIMEOUT 180)
# What operating the server needs (issue #33): CORS, the default --parallel, /metrics.
add_test(NAME serve_ops_test
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/serve_ops_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/serve_ops)
set_tests_properties(serve_ops_test PROPERTIES LABELS reference TIMEOUT 300)
# Tool calls and reasoning with the openai client (and LangChain when installed) on Qwen3's
# template from the corpus; the answers' ids come from the --test-replies hook.
add_test(NAME serve_tools_test
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/serve_tools_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/serve_tools
          --templates ${MOEX_CHAT_TEMPLATE_CORPUS})
set_tests_properties(serve_tools_test PROPERTIES LABELS reference TIMEOUT 300)
# Structured output (response_format, guided_*) with the openai client and jsonschema; in a
# build without xgrammar it checks the 400 that says so.
if(MOEX_HAVE_XGRAMMAR)
  set(_moex_grammar_engine ON)
else()
  set(_moex_grammar_engine OFF)
endif()
add_test(NAME serve_structured_test
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/serve_structured_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/serve_structured
          --engine ${_moex_grammar_engine})
set_tests_properties(serve_structured_test PROPERTIES LABELS reference TIMEOUT 300)
# Constrained tool calls (tool_choice required / named, strict tools) with the openai client and
# jsonschema on Qwen3's template; in a build without xgrammar it checks the 400 that says so.
add_test(NAME serve_toolchoice_test
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/serve_toolchoice_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/serve_toolchoice
          --templates ${MOEX_CHAT_TEMPLATE_CORPUS} --engine ${_moex_grammar_engine})
set_tests_properties(serve_toolchoice_test PROPERTIES LABELS reference TIMEOUT 300)
# Tool calls end to end in the other constrained formats (harmony, DeepSeek V3.1 and R1 shapes,
# GLM-4.5, MiniMax-M2, Kimi-K2): each on its family's tiny preset with the family's template
# from the corpus and its markers as special tokens, the openai client and LangChain; about
# 4 s each. Without xgrammar the constrained requests are 400s (serve_toolchoice_test's).
if(MOEX_HAVE_XGRAMMAR)
  foreach(_moex_format harmony deepseek_v3 deepseek_r1 glm45 minimax_m2 kimi_k2)
    add_test(NAME serve_toolformats_test_${_moex_format}
      COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/serve_toolformats_test.py
              --moex $<TARGET_FILE:moex>
              --work ${CMAKE_CURRENT_BINARY_DIR}/serve_toolformats_${_moex_format}
              --templates ${MOEX_CHAT_TEMPLATE_CORPUS} --format ${_moex_format})
    set_tests_properties(serve_toolformats_test_${_moex_format} PROPERTIES LABELS reference
                         TIMEOUT 180)
  endforeach()
endif()
# serve --spec ngram against a server without it (attention and recurrent tiny models, streamed
# and not, several requests at once; tool calls on Qwen3's template from the corpus); ~5 s.
add_test(NAME serve_spec_test
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/serve_spec_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/serve_spec
          --templates ${MOEX_CHAT_TEMPLATE_CORPUS})
set_tests_properties(serve_spec_test PROPERTIES LABELS reference TIMEOUT 300)
