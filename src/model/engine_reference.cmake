# Reference tests of the ops and the decode engine against mlx / mlx-lm (label `reference`),
# run with MOEX_PYTHON (the venv with mlx, mlx-lm, numpy). Included by src/model/CMakeLists.txt.
set(MOEX_ENGINE_REF_DIR ${CMAKE_CURRENT_SOURCE_DIR}/engine/reference)
add_executable(model_ops_reference_test ${MOEX_ENGINE_REF_DIR}/ops_reference_test.cc)
target_link_libraries(model_ops_reference_test PRIVATE moex_model GTest::gtest GTest::gtest_main)
target_compile_definitions(model_ops_reference_test PRIVATE
  MOEX_PYTHON="${MOEX_PYTHON}"
  MOEX_OPS_REFERENCE_SCRIPT="${MOEX_ENGINE_REF_DIR}/ops_reference.py")
add_test(NAME model_ops_reference_test COMMAND model_ops_reference_test)
set_tests_properties(model_ops_reference_test PROPERTIES LABELS reference TIMEOUT 600)

# Decode parity with mlx-lm per family: `moex make-model --preset tiny-<family> --dtype f32`,
# then prefill + 32 greedy steps in moex (fused on, then off) and in mlx-lm on the same ids.
# f32 checkpoints make mlx-lm compute in float32, so 1e-3 normalized RMS is meaningful.
set(MOEX_PARITY_PROMPT "3,14,15,92,65,35,89,79,32,38,46,26,43")
foreach(preset tiny-qwen3-moe tiny-mixtral tiny-olmoe tiny-olmoe-bias tiny-qwen2-moe tiny-phimoe
               tiny-llama4 tiny-lfm2-moe)
  add_test(NAME engine_parity_${preset}
    COMMAND ${MOEX_PYTHON} ${MOEX_ENGINE_REF_DIR}/parity.py $<TARGET_FILE:moex>
            ${CMAKE_CURRENT_BINARY_DIR}/parity_models/${preset} --make-preset ${preset}
            --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-3)
  set_tests_properties(engine_parity_${preset} PROPERTIES LABELS reference TIMEOUT 600
                       SKIP_RETURN_CODE 77)
endforeach()
# The fp quantization modes (docs/quant_formats.md): checkpoints whose every quantized module,
# routers included, is mxfp4 / mxfp8 / nvfp4, as mlx-lm loads them (config "mode").
foreach(case qwen3-moe:mxfp4 qwen3-moe:mxfp8 qwen3-moe:nvfp4 mixtral:mxfp4 olmoe-bias:mxfp4)
  string(REPLACE ":" ";" parts ${case})
  list(GET parts 0 family)
  list(GET parts 1 qmode)
  add_test(NAME engine_parity_tiny-${family}_${qmode}
    COMMAND ${MOEX_PYTHON} ${MOEX_ENGINE_REF_DIR}/parity.py $<TARGET_FILE:moex>
            ${CMAKE_CURRENT_BINARY_DIR}/parity_models/tiny-${family}-${qmode}
            --make-preset tiny-${family} --make-arg=--mode --make-arg=${qmode}
            --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-3)
  set_tests_properties(engine_parity_tiny-${family}_${qmode} PROPERTIES LABELS reference
                       TIMEOUT 600 SKIP_RETURN_CODE 77)
endforeach()
# The same modes as mlx-lm's own converter writes them (`mlx_lm convert -q --q-mode M` of a
# float checkpoint): it keeps routers at 8-bit affine, so modes mix within one model.
foreach(case qwen3-moe:mxfp4 olmoe:nvfp4 qwen2-moe:mxfp8)
  string(REPLACE ":" ";" parts ${case})
  list(GET parts 0 family)
  list(GET parts 1 qmode)
  add_test(NAME engine_parity_tiny-${family}_mlx_convert_${qmode}
    COMMAND ${MOEX_PYTHON} ${MOEX_ENGINE_REF_DIR}/parity.py $<TARGET_FILE:moex>
            ${CMAKE_CURRENT_BINARY_DIR}/parity_models/tiny-${family}-convert-${qmode}
            --make-preset tiny-${family} "--mlx-convert=--q-mode ${qmode}"
            --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-3)
  set_tests_properties(engine_parity_tiny-${family}_mlx_convert_${qmode} PROPERTIES
                       LABELS reference TIMEOUT 600 SKIP_RETURN_CODE 77)
endforeach()
# A bf16 checkpoint (make-model's default dtype), with mlx-lm's compute dtype set to float32.
add_test(NAME engine_parity_tiny-qwen3-moe_bf16
  COMMAND ${MOEX_PYTHON} ${MOEX_ENGINE_REF_DIR}/parity.py $<TARGET_FILE:moex>
          ${CMAKE_CURRENT_BINARY_DIR}/parity_models/tiny-qwen3-moe-bf16 --make-preset tiny-qwen3-moe
          --dtype bf16 --f32-compute --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off)
set_tests_properties(engine_parity_tiny-qwen3-moe_bf16 PROPERTIES LABELS reference TIMEOUT 600
                     SKIP_RETURN_CODE 77)

# Bad input through the command line: exit code 2 and a message naming the problem.
add_test(NAME engine_cli_errors_test
  COMMAND bash ${MOEX_ENGINE_REF_DIR}/cli_errors_test.sh $<TARGET_FILE:moex>)
set_tests_properties(engine_cli_errors_test PROPERTIES LABELS unit TIMEOUT 300)
# The same decode on the scalar kernels (every CPU runs them).
add_test(NAME engine_parity_tiny-qwen3-moe_scalar
  COMMAND ${MOEX_PYTHON} ${MOEX_ENGINE_REF_DIR}/parity.py $<TARGET_FILE:moex>
          ${CMAKE_CURRENT_BINARY_DIR}/parity_models/tiny-qwen3-moe-scalar --make-preset tiny-qwen3-moe
          --dtype f32 --isa scalar --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off)
set_tests_properties(engine_parity_tiny-qwen3-moe_scalar PROPERTIES LABELS reference TIMEOUT 600
                     SKIP_RETURN_CODE 77)
# Llama-4 with an 8-token attention chunk and floor_scale 4, so that chunked attention and the
# NoPE layers' attention temperature both act within the 45 positions of the test.
add_test(NAME engine_parity_tiny-llama4_chunked
  COMMAND ${MOEX_PYTHON} ${MOEX_ENGINE_REF_DIR}/parity.py $<TARGET_FILE:moex>
          ${CMAKE_CURRENT_BINARY_DIR}/parity_models/tiny-llama4-chunked --make-preset tiny-llama4
          --dtype f32 --set text_config.attention_chunk_size=8 --set text_config.floor_scale=4
          --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off)
set_tests_properties(engine_parity_tiny-llama4_chunked PROPERTIES LABELS reference TIMEOUT 600
                     SKIP_RETURN_CODE 77)
