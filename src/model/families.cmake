# The tiny preset of every model family, read from arch/families.def (the registry's one list):
# MOEX_FAMILY_TINY_PRESETS, in registry order, for the tests that run every family
# (engine_reference.cmake). Included by src/model/CMakeLists.txt; editing families.def
# reconfigures.
set(MOEX_FAMILIES_DEF ${CMAKE_CURRENT_SOURCE_DIR}/arch/families.def)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${MOEX_FAMILIES_DEF})
file(STRINGS ${MOEX_FAMILIES_DEF} _moex_family_lines REGEX "^MOEX_FAMILY")
set(MOEX_FAMILY_TINY_PRESETS "")
foreach(_line IN LISTS _moex_family_lines)
  if(NOT _line MATCHES "^MOEX_FAMILY\\(([a-z0-9_]+), \"(tiny-[a-z0-9.-]+)\"\\)$")
    message(FATAL_ERROR "${MOEX_FAMILIES_DEF}: expected MOEX_FAMILY(ident, \"tiny-preset\"), "
                        "one per line; got '${_line}'")
  endif()
  list(APPEND MOEX_FAMILY_TINY_PRESETS ${CMAKE_MATCH_2})
endforeach()
list(LENGTH MOEX_FAMILY_TINY_PRESETS _moex_family_count)
if(_moex_family_count EQUAL 0)
  message(FATAL_ERROR "${MOEX_FAMILIES_DEF}: no MOEX_FAMILY lines")
endif()
