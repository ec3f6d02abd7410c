# The core may depend on nothing but the C++ standard library (SPEC section 2).
# Enforced twice: at configure time the target must link nothing, and a test
# (core_purity) scans every core source for includes outside the standard
# library or outside src/core.
function(gangway_check_core_purity target core_dir)
  get_target_property(libs ${target} LINK_LIBRARIES)
  if(libs)
    message(FATAL_ERROR "${target} must link nothing but the standard library; it links: ${libs}")
  endif()
  get_target_property(ilibs ${target} INTERFACE_LINK_LIBRARIES)
  if(ilibs)
    message(FATAL_ERROR "${target} must link nothing but the standard library; it links: ${ilibs}")
  endif()
endfunction()
