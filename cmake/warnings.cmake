# Warnings are errors for everything the project compiles.
function(gangway_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wimplicit-fallthrough -Werror
                                           # Designated initializers omit defaulted fields on purpose.
                                           -Wno-missing-field-initializers)
endfunction()
