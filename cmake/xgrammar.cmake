# xgrammar's C++ core (structured output's grammar engine), built from the sources that
# scripts/fetch_xgrammar.sh unpacks from its pinned PyPI source distribution. Optional:
#   MOEX_XGRAMMAR=AUTO (default) builds it when MOEX_XGRAMMAR_DIR holds the sources, ON
#   requires them, OFF leaves it out (response_format json is then a 400 saying so).
# Sets MOEX_HAVE_XGRAMMAR and defines the target moex_xgrammar.
set(MOEX_XGRAMMAR AUTO CACHE STRING "Build the xgrammar grammar engine: ON, OFF or AUTO")
set(MOEX_XGRAMMAR_DIR "${CMAKE_SOURCE_DIR}/.cache/xgrammar/xgrammar-0.2.9" CACHE PATH
    "xgrammar source tree (scripts/fetch_xgrammar.sh prints it)")
set(MOEX_HAVE_XGRAMMAR OFF)
if(NOT MOEX_XGRAMMAR STREQUAL "OFF")
  if(EXISTS "${MOEX_XGRAMMAR_DIR}/cpp/grammar_matcher.cc"
     AND EXISTS "${MOEX_XGRAMMAR_DIR}/include/xgrammar/xgrammar.h")
    set(MOEX_HAVE_XGRAMMAR ON)
  elseif(MOEX_XGRAMMAR STREQUAL "ON")
    message(FATAL_ERROR "MOEX_XGRAMMAR=ON but ${MOEX_XGRAMMAR_DIR} holds no xgrammar sources "
                        "(run scripts/fetch_xgrammar.sh)")
  else()
    message(STATUS "moex: no xgrammar sources in ${MOEX_XGRAMMAR_DIR} "
                   "(scripts/fetch_xgrammar.sh): structured output is not built")
  endif()
endif()
if(MOEX_HAVE_XGRAMMAR)
  file(GLOB_RECURSE _moex_xg_sources CONFIGURE_DEPENDS "${MOEX_XGRAMMAR_DIR}/cpp/*.cc")
  list(FILTER _moex_xg_sources EXCLUDE REGEX "/cpp/tvm_ffi/.*\\.cc$")
  add_library(moex_xgrammar STATIC ${_moex_xg_sources})
  # xgrammar is C++17; its warnings are not ours to fix. Its 19 files compile in batches of 8
  # (137 s of CPU one by one, 75 s batched, measured on a cold build: 20% of the whole build).
  set_target_properties(moex_xgrammar PROPERTIES CXX_STANDARD 17 UNITY_BUILD ON
                                                 UNITY_BUILD_BATCH_SIZE 8)
  target_compile_options(moex_xgrammar PRIVATE -w)
  target_include_directories(moex_xgrammar PUBLIC "${MOEX_XGRAMMAR_DIR}/include")
  target_include_directories(moex_xgrammar SYSTEM PUBLIC
                             "${MOEX_XGRAMMAR_DIR}/3rdparty/picojson"
                             "${MOEX_XGRAMMAR_DIR}/3rdparty/dlpack/include")
  target_compile_definitions(moex_xgrammar PUBLIC XGRAMMAR_ENABLE_CPPTRACE=0
                             XGRAMMAR_ENABLE_INTERNAL_CHECK=0)
  find_package(Threads REQUIRED)
  target_link_libraries(moex_xgrammar PUBLIC Threads::Threads)
endif()
message(STATUS "moex: xgrammar ${MOEX_HAVE_XGRAMMAR}")
