# The live reference test of gather_qmm against mx.gather_qmm (label reference).
if(TARGET moex_io)
  add_executable(gather_qmm_ref_tool ${CMAKE_CURRENT_LIST_DIR}/gather_qmm_ref_tool.cc)
  target_link_libraries(gather_qmm_ref_tool PRIVATE moex_kernels moex_io)
  add_test(NAME kernels_gather_qmm_reference
           COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gather_qmm_reference_test.py
                   --tool $<TARGET_FILE:gather_qmm_ref_tool>)
  # The 1e-5 gate is the exact tier's (src/kernels/README.md, precision tiers).
  set_tests_properties(kernels_gather_qmm_reference PROPERTIES LABELS reference TIMEOUT 900
                       ENVIRONMENT MOEX_PRECISION=exact)
endif()
