# The GGUF twin writer of the llama.cpp peer harness (docs/peers.md), label `reference`: every
# twin tensor read back by gguf's own reader and dequantizer matches the moex weights within
# the Q4_0/Q8_0 requantization bound of its block. Needs no llama.cpp build (that and the
# speed comparison stay out of CI: scripts/peers/). Included by tools/CMakeLists.txt.
add_test(NAME gguf_twin_reference
  COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gguf_twin_test.py
          --moex $<TARGET_FILE:moex> --work ${CMAKE_CURRENT_BINARY_DIR}/gguf_twin)
set_tests_properties(gguf_twin_reference PROPERTIES LABELS reference TIMEOUT 300)

# The report of compare.py (peer_report.py) on a hand-made folder of runs: bytes per token with
# and without a --depth, names, ratio and fraction of the probe.
add_test(NAME peer_report_unit COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/peer_report_test.py)
set_tests_properties(peer_report_unit PROPERTIES LABELS unit TIMEOUT 60)
