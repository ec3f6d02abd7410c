# Warnings are errors for everything the project compiles.
function(gangway_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wimplicit-fallthrough -Werror
                                           # Designated initializers omit defaulted fields on purpose.
                                           -Wno-missing-field-initializers
                                           # g++ 12 at -O3 reports false -Wrestrict errors on
                                           # "literal" + std::string&& (GCC bug 105329).
                                           -Wno-restrict)
endfunction()
