# Warnings are errors for everything the project compiles (g++ for the main build, clang++ for
# the fuzz targets).
function(gangway_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wimplicit-fallthrough -Werror
                                           # Designated initializers omit defaulted fields on purpose.
                                           -Wno-missing-field-initializers)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # g++ 12 at -O3 reports false -Wrestrict errors on "literal" + std::string&& (GCC bug
    # 105329). clang has no -Wrestrict and rejects the unknown option.
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
endfunction()
